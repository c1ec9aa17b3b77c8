package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// testOwnTokenRetry: an acquisition by the token that already holds the key
// (not reentrant) is a retry of one whose reply was lost, as a client
// library sends after a network error: it is granted, and changes nothing
// but, when fenced, the fence, which still only increases.
func testOwnTokenRetry(t *testing.T, s store.Store) {
	ctx := context.Background()
	key := newKey("retry")
	tok := store.NewToken()
	req := store.Request{Key: key, Token: tok, TTL: longTTL, Fence: fences(s)}
	before := time.Now()
	first := mustAcquire(t, s, req)
	took := time.Since(before)
	if first.TTL <= 0 || first.TTL > longTTL+time.Millisecond {
		t.Fatalf("first grant = %+v, want TTL about %v", first, longTTL)
	}
	again, err := s.Acquire(ctx, req)
	if err != nil || !again.Acquired {
		t.Fatalf("the holder's own retry = %+v, %v; want granted", again, err)
	}
	// A store whose Grant.TTL is a validity it measures from its own call
	// (a quorum store) may claim for the retry up to the first call's
	// duration more: the first estimate counted that time whole.
	if again.TTL <= 0 || again.TTL > first.TTL+took {
		t.Fatalf("retry grant TTL = %v, want what is left of %v", again.TTL, first.TTL)
	}
	if req.Fence && again.Fence <= first.Fence {
		t.Fatalf("retry fence %d, want above the first %d", again.Fence, first.Fence)
	}
	mustBeHeld(t, s, key)
	mustOutcome(t, "Release by the holder", store.OK)(s.Release(ctx, key, tok))
	mustBeFree(t, s, key)

	// A reentrant request of the same token is another kind of hold: it
	// does not join a plain one, nor a plain request a reentrant one.
	if refuses(s, *reentrant) != nil {
		return
	}
	mustAcquire(t, s, store.Request{Key: key, Token: tok, TTL: longTTL})
	if g, err := s.Acquire(ctx, store.Request{Key: key, Token: tok, TTL: longTTL, Reentrant: true}); err != nil || g.Acquired {
		t.Fatalf("reentrant request on a plain hold of the same token = %+v, %v; want refused", g, err)
	}
	mustOutcome(t, "Release", store.OK)(s.Release(ctx, key, tok))
}

// testReentryTTL: a re-entry raises the key's TTL but never lowers it, and
// reports the key's real TTL; Extend of a reentrant key likewise; a fenced
// re-entry of a hold taken without a fence starts one.
func testReentryTTL(t *testing.T, s store.Store) {
	ctx := context.Background()
	key := newKey("reentry-ttl")
	owner := store.NewToken()
	outer := mustAcquire(t, s, store.Request{Key: key, Token: owner, TTL: longTTL, Reentrant: true})
	if outer.Fence != 0 {
		t.Fatalf("unfenced grant has fence %d", outer.Fence)
	}
	inner := mustAcquire(t, s, store.Request{Key: key, Token: owner, TTL: time.Second, Reentrant: true, Fence: true})
	if inner.TTL <= 30*time.Second {
		t.Fatalf("a short re-entry reports TTL %v: it shortened the %v hold", inner.TTL, longTTL)
	}
	if rem := mustBeHeld(t, s, key); rem <= 30*time.Second {
		t.Fatalf("after a 1s re-entry a contender sees %v: the %v hold was shortened", rem, longTTL)
	}
	if inner.Fence <= 0 {
		t.Fatalf("fenced re-entry of an unfenced hold got fence %d, want a new one", inner.Fence)
	}
	third := mustAcquire(t, s, store.Request{Key: key, Token: owner, TTL: time.Second, Reentrant: true, Fence: true})
	if third.Fence != inner.Fence {
		t.Fatalf("a later fenced re-entry got fence %d, want the hold's %d", third.Fence, inner.Fence)
	}
	mustOutcome(t, "Extend to 1s", store.OK)(s.Extend(ctx, key, owner, time.Second))
	if rem := mustBeHeld(t, s, key); rem <= 30*time.Second {
		t.Fatalf("Extend to 1s of a reentrant key left %v: it lowered the shared TTL", rem)
	}
	for i := 0; i < 3; i++ {
		if _, err := s.Release(ctx, key, owner); err != nil {
			t.Fatal(err)
		}
	}
	mustBeFree(t, s, key)
}
