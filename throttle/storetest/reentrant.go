package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

func testReentrant(t *testing.T, s store.Store) {
	t.Run("holds", func(t *testing.T) {
		ctx := context.Background()
		key := newKey("reentrant")
		owner := store.NewToken()
		const short = 2 * time.Second
		req := store.Request{Key: key, Token: owner, TTL: short, Reentrant: true, Fence: true}
		first := mustAcquire(t, s, req)
		if first.Holds != 1 || first.Fence <= 0 {
			t.Fatalf("first reentrant grant = %+v, want Holds 1 and a positive Fence", first)
		}
		req.TTL = longTTL
		again := mustAcquire(t, s, req)
		if again.Holds != 2 {
			t.Fatalf("re-entry grant = %+v, want Holds 2", again)
		}
		if again.Fence != first.Fence {
			t.Fatalf("re-entry Fence = %d, want the first acquisition's %d", again.Fence, first.Fence)
		}
		if rem := mustBeHeld(t, s, key); rem <= short {
			t.Fatalf("after re-entry with TTL %v a contender sees Remaining %v: the TTL was not refreshed", longTTL, rem)
		}

		other := store.NewToken()
		g, err := s.Acquire(ctx, store.Request{Key: key, Token: other, TTL: longTTL, Reentrant: true})
		if err != nil || g.Acquired {
			t.Fatalf("reentrant Acquire by another owner = %+v, %v; want refused", g, err)
		}
		mustOutcome(t, "Release by another owner", store.HeldByOther)(s.Release(ctx, key, other))
		mustOutcome(t, "Extend by another owner", store.HeldByOther)(s.Extend(ctx, key, other, longTTL))

		mustOutcome(t, "first Release of two holds", store.StillHeld)(s.Release(ctx, key, owner))
		mustBeHeld(t, s, key)
		mustOutcome(t, "second Release of two holds", store.OK)(s.Release(ctx, key, owner))
		mustOutcome(t, "third Release", store.Gone)(s.Release(ctx, key, owner))
		mustBeFree(t, s, key)
	})
	t.Run("extend", func(t *testing.T) {
		ctx := context.Background()
		key := newKey("reentrant-extend")
		owner := store.NewToken()
		mustAcquire(t, s, store.Request{Key: key, Token: owner, TTL: 2 * time.Second, Reentrant: true})
		mustOutcome(t, "Extend by the owner", store.OK)(s.Extend(ctx, key, owner, longTTL))
		if rem := mustBeHeld(t, s, key); rem <= 2*time.Second {
			t.Fatalf("after Extend to %v a contender sees Remaining %v", longTTL, rem)
		}
		mustOutcome(t, "Release by the owner", store.OK)(s.Release(ctx, key, owner))
		mustBeFree(t, s, key)
	})
	t.Run("plain-and-reentrant-do-not-mix", func(t *testing.T) {
		// The same token is used on purpose: a plain lock is not a hold
		// count, so even its own token cannot re-enter it, and a
		// reentrant lock cannot be taken again by a plain acquisition.
		ctx := context.Background()
		tok := store.NewToken()

		reentrantKey := newKey("reentrant-then-plain")
		mustAcquire(t, s, store.Request{Key: reentrantKey, Token: tok, TTL: longTTL, Reentrant: true})
		g, err := s.Acquire(ctx, store.Request{Key: reentrantKey, Token: tok, TTL: longTTL})
		if err != nil || g.Acquired {
			t.Fatalf("plain Acquire of a held reentrant key = %+v, %v; want refused", g, err)
		}
		mustOutcome(t, "Release of the reentrant key", store.OK)(s.Release(ctx, reentrantKey, tok))

		plainKey := newKey("plain-then-reentrant")
		mustAcquire(t, s, store.Request{Key: plainKey, Token: tok, TTL: longTTL})
		g, err = s.Acquire(ctx, store.Request{Key: plainKey, Token: tok, TTL: longTTL, Reentrant: true})
		if err != nil || g.Acquired {
			t.Fatalf("reentrant Acquire of a held plain key = %+v, %v; want refused", g, err)
		}
		mustOutcome(t, "Release of the plain key", store.OK)(s.Release(ctx, plainKey, tok))
	})
}
