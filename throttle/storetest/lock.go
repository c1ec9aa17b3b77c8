package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

func testAcquire(t *testing.T, s store.Store) {
	key := newKey("acquire")
	const ttl = 10 * time.Second
	g := acquire(t, s, store.Request{Key: key, Token: storekit.NewToken(), TTL: ttl}, true)
	require.True(t, g.Holds == 1 && g.Remaining == 0 && g.Fence == 0, "grant %+v, want Holds 1, Remaining 0, Fence 0", g)
	g = acquire(t, s, store.Request{Key: key, Token: storekit.NewToken(), TTL: ttl, Fence: fences(s)}, false)
	require.True(t, g.Remaining > 0 && g.Remaining <= ttl && g.Holds == 0 && g.Fence == 0, "refused: %+v, want Remaining in (0, %v]", g, ttl)
}

// testReleaseExtend: only the holder's token releases or extends a lock.
func testReleaseExtend(t *testing.T, s store.Store) {
	key, tok := newKey("release"), storekit.NewToken()
	acquire(t, s, lock(key, tok), true)
	mustOutcome(t, "Release with a wrong token", store.HeldByOther)(s.Release(bg, key, storekit.NewToken()))
	mustBeHeld(t, s, key)
	mustOutcome(t, "Release with the right token", store.OK)(s.Release(bg, key, tok))
	mustOutcome(t, "second Release", store.Gone)(s.Release(bg, key, tok))
	mustBeFree(t, s, key)

	key, tok = newKey("extend"), storekit.NewToken()
	const short = 2 * time.Second
	acquire(t, s, store.Request{Key: key, Token: tok, TTL: short}, true)
	mustOutcome(t, "Extend with the right token", store.OK)(s.Extend(bg, key, tok, longTTL))
	rem := mustBeHeld(t, s, key)
	require.True(t, rem > short && rem <= longTTL, "Remaining %v after Extend to %v", rem, longTTL)
	mustOutcome(t, "Extend with a wrong token", store.HeldByOther)(s.Extend(bg, key, storekit.NewToken(), longTTL))
	mustOutcome(t, "Extend of a missing key", store.Gone)(s.Extend(bg, newKey("extend-missing"), tok, longTTL))
	mustOutcome(t, "Release after Extend", store.OK)(s.Release(bg, key, tok))
	mustOutcome(t, "Extend after Release", store.Gone)(s.Extend(bg, key, tok, longTTL))
}

// testTokenSafety: a lock expires, and its lapsed holder must not free or
// extend its successor's lock.
func testTokenSafety(t *testing.T, s store.Store) {
	key, a := newKey("token-safety"), storekit.NewToken()
	acquire(t, s, store.Request{Key: key, Token: a, TTL: 50 * time.Millisecond}, true)
	b := waitFree(t, s, key)
	mustOutcome(t, "Release by the expired holder A", store.HeldByOther)(s.Release(bg, key, a))
	mustOutcome(t, "Extend by the expired holder A", store.HeldByOther)(s.Extend(bg, key, a, longTTL))
	mustBeHeld(t, s, key)
	mustOutcome(t, "Release by the holder B", store.OK)(s.Release(bg, key, b))
}

// testOwnTokenRetry: a plain acquisition by the holder's token retries one
// whose reply was lost: it is granted, and changes only the fence, upwards.
func testOwnTokenRetry(t *testing.T, s store.Store) {
	key, tok := newKey("retry"), storekit.NewToken()
	req := store.Request{Key: key, Token: tok, TTL: longTTL, Fence: fences(s)}
	before := time.Now()
	first := acquire(t, s, req, true)
	took := time.Since(before)
	require.True(t, first.TTL > 0 && first.TTL <= longTTL+time.Millisecond, "first grant %+v", first)
	again := acquire(t, s, req, true)
	// A store whose TTL is a validity measured from its own call (a quorum
	// store) may claim up to the first call's duration more for the retry.
	require.True(t, again.TTL > 0 && again.TTL <= first.TTL+took, "the retry's TTL %v, want what is left", again.TTL)
	require.True(t, !req.Fence || again.Fence > first.Fence, "the retry's fence %d after %d", again.Fence, first.Fence)
	mustBeHeld(t, s, key)
	mustOutcome(t, "Release by the holder", store.OK)(s.Release(bg, key, tok))
	mustBeFree(t, s, key)
}

// testRefusals: what a store refuses (see Run) it refuses with
// store.ErrInvalid, as Refuses says, and without taking the key.
func testRefusals(t *testing.T, s store.Store) {
	for _, kind := range []store.Request{fenced, reentrant, holders} {
		if refuses(s, kind) != nil {
			req := store.Request{Key: newKey("refusals"), Token: storekit.NewToken(), TTL: longTTL,
				Fence: kind.Fence, Reentrant: kind.Reentrant, Holders: kind.Holders}
			_, err := s.Acquire(bg, req)
			require.ErrorIs(t, err, store.ErrInvalid, "Acquire(%+v) of a refused kind", req)
			require.ErrorIs(t, refuses(s, kind), store.ErrInvalid, "Refuses(%+v)", kind)
			mustBeFree(t, s, req.Key)
		}
	}
}

func testCancelledContext(t *testing.T, s store.Store) {
	ctx, cancel := context.WithCancel(bg)
	cancel()
	key, tok := newKey("cancelled"), storekit.NewToken()
	done := make(chan [3]error, 1)
	go func() {
		_, acquired := s.Acquire(ctx, lock(key, tok))
		_, released := s.Release(ctx, key, tok)
		_, extended := s.Extend(ctx, key, tok, longTTL)
		done <- [3]error{acquired, released, extended}
	}()
	select {
	case errs := <-done: // context.Canceled, or the store's own error
		for i, op := range []string{"Acquire", "Release", "Extend"} {
			assert.Error(t, errs[i], "%s with a cancelled context", op)
		}
	case <-time.After(patience):
		require.Fail(t, "store calls with a cancelled context did not return", "within %v", patience)
	}
	_, _ = s.Release(bg, key, tok) // a lock a store took anyway
}

// testOddKeys: raw keys with binary bytes, separators, braces or 4 KiB, each
// with a hash tag of its own (one Redis Cluster slot), work like any other.
func testOddKeys(t *testing.T, s store.Store) {
	tag := "storetest:{" + storekit.NewToken() + "}"
	for _, key := range []string{
		tag + "\x00\x01\xfe\xff\r\n\t \"'\\%",
		tag + ":a:{b}:}{:{}:" + "::",
		tag + strings.Repeat("k", 4096),
		tag + "ключ-鍵-🔑",
	} {
		tok := storekit.NewToken()
		g := acquire(t, s, store.Request{Key: key, Token: tok, TTL: longTTL, Fence: fences(s)}, true)
		require.True(t, !fences(s) || g.Fence > 0, "fence %d", g.Fence)
		mustBeHeld(t, s, key)
		mustOutcome(t, "Extend", store.OK)(s.Extend(bg, key, tok, longTTL))
		mustOutcome(t, "Release with a wrong token", store.HeldByOther)(s.Release(bg, key, storekit.NewToken()))
		mustOutcome(t, "Release", store.OK)(s.Release(bg, key, tok))
		mustBeFree(t, s, key)
		mustBeFree(t, s, key[:len(key)-1]+"\x00") // a neighbour is another key
	}
}

func testReentrant(t *testing.T, s store.Store) {
	key, owner := newKey("reentrant"), storekit.NewToken()
	const short = 2 * time.Second
	req := store.Request{Key: key, Token: owner, TTL: short, Reentrant: true, Fence: true}
	first := acquire(t, s, req, true)
	require.True(t, first.Holds == 1 && first.Fence > 0, "first reentrant grant %+v", first)
	req.TTL = longTTL
	again := acquire(t, s, req, true)
	require.True(t, again.Holds == 2 && again.Fence == first.Fence, "re-entry grant %+v, want Holds 2 and fence %d", again, first.Fence)
	require.Greater(t, mustBeHeld(t, s, key), short, "the re-entry refreshed the TTL")

	other := storekit.NewToken()
	acquire(t, s, store.Request{Key: key, Token: other, TTL: longTTL, Reentrant: true}, false)
	mustOutcome(t, "Release by another owner", store.HeldByOther)(s.Release(bg, key, other))
	mustOutcome(t, "Extend by another owner", store.HeldByOther)(s.Extend(bg, key, other, longTTL))

	mustOutcome(t, "first Release of two holds", store.StillHeld)(s.Release(bg, key, owner))
	mustBeHeld(t, s, key)
	mustOutcome(t, "second Release of two holds", store.OK)(s.Release(bg, key, owner))
	mustOutcome(t, "third Release", store.Gone)(s.Release(bg, key, owner))
	mustBeFree(t, s, key)

	// Extend raises a single hold's TTL.
	key = newKey("reentrant-extend")
	acquire(t, s, store.Request{Key: key, Token: owner, TTL: 2 * time.Second, Reentrant: true}, true)
	mustOutcome(t, "Extend by the owner", store.OK)(s.Extend(bg, key, owner, longTTL))
	require.Greater(t, mustBeHeld(t, s, key), 2*time.Second, "Remaining after Extend")
	mustOutcome(t, "Release by the owner", store.OK)(s.Release(bg, key, owner))
	mustBeFree(t, s, key)
	// One token on purpose: a plain lock is not a hold count, so even its own
	// token cannot re-enter it, nor a plain request a reentrant lock.
	for _, first := range []bool{true, false} {
		key := newKey("reentrant-mix")
		acquire(t, s, store.Request{Key: key, Token: owner, TTL: longTTL, Reentrant: first}, true)
		acquire(t, s, store.Request{Key: key, Token: owner, TTL: longTTL, Reentrant: !first}, false)
		mustOutcome(t, "Release", store.OK)(s.Release(bg, key, owner))
	}
}

// testReentryTTL: a re-entry, or Extend, raises a reentrant key's TTL but
// never lowers it; a fenced re-entry of an unfenced hold starts a fence.
func testReentryTTL(t *testing.T, s store.Store) {
	key, owner := newKey("reentry-ttl"), storekit.NewToken()
	outer := acquire(t, s, store.Request{Key: key, Token: owner, TTL: longTTL, Reentrant: true}, true)
	require.Zero(t, outer.Fence, "an unfenced grant's fence")
	inner := acquire(t, s, store.Request{Key: key, Token: owner, TTL: time.Second, Reentrant: true, Fence: true}, true)
	require.True(t, inner.TTL > 30*time.Second && mustBeHeld(t, s, key) > 30*time.Second, "a short re-entry shortened the hold: %+v", inner)
	require.Positive(t, inner.Fence, "a fenced re-entry of an unfenced hold gets a fence")
	third := acquire(t, s, store.Request{Key: key, Token: owner, TTL: time.Second, Reentrant: true, Fence: true}, true)
	require.Equal(t, inner.Fence, third.Fence, "a later fenced re-entry gets the hold's fence")
	mustOutcome(t, "Extend to 1s", store.OK)(s.Extend(bg, key, owner, time.Second))
	require.Greater(t, mustBeHeld(t, s, key), 30*time.Second, "Extend must not lower a reentrant key's TTL")
	for _, want := range []store.Outcome{store.StillHeld, store.StillHeld, store.OK} {
		mustOutcome(t, "Release of three holds", want)(s.Release(bg, key, owner))
	}
	mustBeFree(t, s, key)
}

// race runs try from workers goroutines at once, rounds times each or until
// it fails, and returns what failed.
func race(workers, rounds int, try func() error) error {
	var wg sync.WaitGroup
	errs := make([]error, workers)
	start := make(chan struct{})
	for w := range workers {
		wg.Go(func() {
			<-start
			for i := 0; i < rounds && errs[w] == nil; i++ {
				errs[w] = try()
			}
		})
	}
	close(start)
	wg.Wait()
	return errors.Join(errs...)
}

// testContention: of 200 goroutines racing for one key, exactly one wins.
func testContention(t *testing.T, s store.Store) {
	key, winners := newKey("contention"), make(chan string, 200)
	require.NoError(t, race(200, 1, func() error {
		tok := storekit.NewToken()
		g, err := s.Acquire(bg, lock(key, tok))
		if g.Acquired {
			winners <- tok
		}
		return err
	}))
	require.Len(t, winners, 1, "contenders that won one key")
	mustOutcome(t, "Release by the winner", store.OK)(s.Release(bg, key, <-winners))
}

// testFence: the fences of holds one after another, then of contenders'
// holds, are positive and strictly increasing. The winners note their fence
// while they hold the key, so the noted order is the order of the holds.
func testFence(t *testing.T, s store.Store) {
	for _, run := range [][2]int{{1, 20}, {20, 10}} { // workers, rounds
		key, fences := newKey("fence"), []int64{0}
		var mu sync.Mutex
		require.NoError(t, race(run[0], run[1], func() error {
			tok := storekit.NewToken()
			g, err := s.Acquire(bg, store.Request{Key: key, Token: tok, TTL: longTTL, Fence: true})
			if err != nil || !g.Acquired {
				return err
			}
			mu.Lock()
			fences = append(fences, g.Fence)
			mu.Unlock()
			if out, err := s.Release(bg, key, tok); err != nil || out != store.OK {
				return fmt.Errorf("release by a fenced winner: %v, %v", out, err)
			}
			return nil
		}))
		n := len(fences)
		require.True(t, n > 1 && (run[0] > 1 || n == 21), "fences %v: a lone contender refused, or no contender won", fences)
		require.True(t, slices.IsSorted(fences) && len(slices.Compact(slices.Clone(fences))) == n, "fences %v: positive and strictly increasing", fences)
	}
}
