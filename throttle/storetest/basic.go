package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

func testAcquireFree(t *testing.T, s store.Store) {
	key := newKey("acquire-free")
	g := mustAcquire(t, s, store.Request{Key: key, Token: store.NewToken(), TTL: longTTL})
	if g.Holds != 1 || g.Remaining != 0 || g.Fence != 0 {
		t.Fatalf("grant = %+v, want Holds 1, Remaining 0 and Fence 0 (no fence asked)", g)
	}
}

func testAcquireHeld(t *testing.T, s store.Store) {
	key := newKey("acquire-held")
	const ttl = 10 * time.Second
	mustAcquire(t, s, store.Request{Key: key, Token: store.NewToken(), TTL: ttl})
	g, err := s.Acquire(context.Background(), store.Request{Key: key, Token: store.NewToken(), TTL: ttl, Fence: fences(s)})
	if err != nil {
		t.Fatalf("second Acquire: %v", err)
	}
	if g.Acquired {
		t.Fatal("second Acquire with another token succeeded")
	}
	if g.Remaining <= 0 || g.Remaining > ttl {
		t.Fatalf("Remaining = %v, want in (0, %v]", g.Remaining, ttl)
	}
	if g.Holds != 0 || g.Fence != 0 {
		t.Fatalf("refused grant = %+v, want Holds 0 and Fence 0", g)
	}
}

func testRelease(t *testing.T, s store.Store) {
	ctx := context.Background()
	key := newKey("release")
	tok := store.NewToken()
	mustAcquire(t, s, store.Request{Key: key, Token: tok, TTL: longTTL})

	mustOutcome(t, "Release with a wrong token", store.HeldByOther)(s.Release(ctx, key, store.NewToken()))
	mustBeHeld(t, s, key)
	mustOutcome(t, "Release with the right token", store.OK)(s.Release(ctx, key, tok))
	mustOutcome(t, "second Release", store.Gone)(s.Release(ctx, key, tok))
	mustBeFree(t, s, key)
}

func testExtend(t *testing.T, s store.Store) {
	ctx := context.Background()
	key := newKey("extend")
	tok := store.NewToken()
	const short = 2 * time.Second
	mustAcquire(t, s, store.Request{Key: key, Token: tok, TTL: short})

	mustOutcome(t, "Extend with the right token", store.OK)(s.Extend(ctx, key, tok, longTTL))
	if rem := mustBeHeld(t, s, key); rem <= short || rem > longTTL {
		t.Fatalf("after Extend to %v a contender sees Remaining %v, want in (%v, %v]", longTTL, rem, short, longTTL)
	}
	mustOutcome(t, "Extend with a wrong token", store.HeldByOther)(s.Extend(ctx, key, store.NewToken(), longTTL))
	mustOutcome(t, "Extend of a missing key", store.Gone)(s.Extend(ctx, newKey("extend-missing"), tok, longTTL))
	mustOutcome(t, "Release after Extend", store.OK)(s.Release(ctx, key, tok))
	mustOutcome(t, "Extend after Release", store.Gone)(s.Extend(ctx, key, tok, longTTL))
}

// testRefusals: what a store refuses (see Run) it refuses with
// store.ErrInvalid, as Refuses says, and without taking the key.
func testRefusals(t *testing.T, s store.Store) {
	kinds := map[string]store.Request{"fenced": *fenced, "reentrant": *reentrant}
	for name, kind := range kinds {
		if refuses(s, kind) == nil {
			continue
		}
		t.Run(name, func(t *testing.T) {
			key := newKey("refusals")
			req := kind
			req.Key, req.Token, req.TTL = key, store.NewToken(), longTTL
			g, err := s.Acquire(context.Background(), req)
			if !errors.Is(err, store.ErrInvalid) || g.Acquired {
				t.Fatalf("Acquire of a refused kind = %+v, %v; want store.ErrInvalid", g, err)
			}
			if !errors.Is(refuses(s, kind), store.ErrInvalid) {
				t.Fatalf("Refuses = %v, want store.ErrInvalid", refuses(s, kind))
			}
			mustBeFree(t, s, key)
		})
	}
}

func testExpiry(t *testing.T, s store.Store) {
	key := newKey("expiry")
	tok := store.NewToken()
	mustAcquire(t, s, store.Request{Key: key, Token: tok, TTL: 50 * time.Millisecond})
	other := waitFree(t, s, key, longTTL)
	mustOutcome(t, "Release of the expired holder", store.HeldByOther)(s.Release(context.Background(), key, tok))
	mustOutcome(t, "Release of the new holder", store.OK)(s.Release(context.Background(), key, other))
}
