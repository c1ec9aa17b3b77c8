package storetest

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

// places is how many holders the semaphore checks let a key have.
const places = 3

var (
	holders       = store.Request{Holders: places}
	fencedHolders = store.Request{Holders: places, Fence: true}
)

// place returns a request for one of places holders of key.
func place(key, tok string, ttl time.Duration) store.Request {
	return store.Request{Key: key, Token: tok, TTL: ttl, Holders: places}
}

// testHolders: a semaphore grants places tokens, then refuses with the time
// until the earliest holder's time ends; a retry is granted unchanged, a
// release frees one place, and a plain lock never shares the key.
func testHolders(t *testing.T, s store.Store) {
	key := newKey("holders")
	toks := []string{storekit.NewToken(), storekit.NewToken(), storekit.NewToken()}
	for i, tok := range toks {
		ttl := longTTL
		if i == 1 {
			ttl = longTTL / 2 // the earliest to end
		}
		g := acquire(t, s, place(key, tok, ttl), true)
		require.True(t, g.Holders == i+1 && g.TTL > 0 && g.TTL <= ttl && g.Remaining == 0, "grant %d: %+v", i, g)
	}
	g := acquire(t, s, place(key, storekit.NewToken(), longTTL), false)
	require.Equal(t, places, g.Holders, "refused: %+v", g)
	require.True(t, g.Remaining > longTTL/4 && g.Remaining <= longTTL/2, "refused: Remaining %v, want the earliest holder's (about %v)", g.Remaining, longTTL/2)
	g = acquire(t, s, place(key, toks[0], longTTL), true)
	require.Equal(t, places, g.Holders, "a holder's retry: %+v", g)
	acquire(t, s, lock(key, storekit.NewToken()), false)
	acquire(t, s, lock(key, toks[0]), false)

	other := storekit.NewToken()
	mustOutcome(t, "Release by a token holding no place", store.Gone)(s.Release(bg, key, other))
	mustOutcome(t, "Extend by a token holding no place", store.Gone)(s.Extend(bg, key, other, longTTL))
	release := func() { mustOutcome(t, "Release by a holder", store.OK)(s.Release(bg, key, toks[1])) }
	if n, ok := s.(store.Notifier); ok {
		watchThen(t, n, key, "release of a holder", release)
	} else {
		release()
	}
	mustOutcome(t, "second Release by that holder", store.Gone)(s.Release(bg, key, toks[1]))
	g = acquire(t, s, place(key, other, longTTL), true)
	require.Equal(t, places, g.Holders, "the freed place taken: %+v", g)
	acquire(t, s, place(key, storekit.NewToken(), longTTL), false)
	for _, tok := range []string{toks[0], toks[2], other} {
		mustOutcome(t, "Release by a holder", store.OK)(s.Release(bg, key, tok))
	}
	mustBeFree(t, s, key)

	// A plain lock refuses a semaphore, even of its own token.
	key, tok := newKey("holders-mix"), storekit.NewToken()
	acquire(t, s, lock(key, tok), true)
	g = acquire(t, s, place(key, tok, longTTL), false)
	require.Positive(t, g.Remaining, "a semaphore refused by a plain lock: %+v", g)
	mustOutcome(t, "Release of the plain lock", store.OK)(s.Release(bg, key, tok))
}

// testHoldersExpiry: a holder that never releases (its process crashed)
// frees its place when its time ends, and can then neither release nor
// extend it.
func testHoldersExpiry(t *testing.T, s store.Store) {
	key, crashed := newKey("holders-expiry"), storekit.NewToken()
	acquire(t, s, place(key, crashed, 50*time.Millisecond), true)
	for range places - 1 {
		acquire(t, s, place(key, storekit.NewToken(), longTTL), true)
	}
	late := storekit.NewToken()
	require.Eventually(t, func() bool {
		g, err := s.Acquire(bg, place(key, late, longTTL))
		require.NoError(t, err, "Acquire")
		return g.Acquired
	}, patience, 10*time.Millisecond, "the crashed holder's place was never freed")
	mustOutcome(t, "Release by the crashed holder", store.Gone)(s.Release(bg, key, crashed))
	mustOutcome(t, "Extend by the crashed holder", store.Gone)(s.Extend(bg, key, crashed, longTTL))
	acquire(t, s, place(key, storekit.NewToken(), longTTL), false)
}

// testHoldersExtend: Extend keeps a holder past its first TTL while another
// holder's time ends.
func testHoldersExtend(t *testing.T, s store.Store) {
	key, kept, lapsed := newKey("holders-extend"), storekit.NewToken(), storekit.NewToken()
	const short = 300 * time.Millisecond // long enough to extend before it ends
	acquire(t, s, place(key, kept, short), true)
	acquire(t, s, place(key, lapsed, short), true)
	acquire(t, s, place(key, storekit.NewToken(), longTTL), true)
	mustOutcome(t, "Extend by a holder", store.OK)(s.Extend(bg, key, kept, longTTL))
	late := storekit.NewToken()
	require.Eventually(t, func() bool {
		g, err := s.Acquire(bg, place(key, late, longTTL))
		require.NoError(t, err, "Acquire")
		return g.Acquired
	}, patience, 10*time.Millisecond, "the lapsed holder's place was never freed")
	// The kept holder's first TTL ended before the lapsed one's did.
	g := acquire(t, s, place(key, storekit.NewToken(), longTTL), false)
	require.Greater(t, g.Remaining, short, "refused while the extended holder holds: %+v", g)
	mustOutcome(t, "Extend by the lapsed holder", store.Gone)(s.Extend(bg, key, lapsed, longTTL))
	mustOutcome(t, "Release by the extended holder", store.OK)(s.Release(bg, key, kept))
	acquire(t, s, place(key, storekit.NewToken(), longTTL), true)
}

// testHoldersContention: goroutines taking and releasing places over and
// over never find more than places of them holding at once.
func testHoldersContention(t *testing.T, s store.Store) {
	key := newKey("holders-contention")
	var live, most, grants atomic.Int64
	require.NoError(t, race(16, 40, func() error {
		tok := storekit.NewToken()
		g, err := s.Acquire(bg, place(key, tok, longTTL))
		if err != nil || !g.Acquired {
			return err
		}
		grants.Add(1)
		raise(&most, live.Add(1))
		if g.Holders < 1 || g.Holders > places {
			return fmt.Errorf("a grant reports %d holders", g.Holders)
		}
		time.Sleep(100 * time.Microsecond)
		live.Add(-1) // before the place is free: another may take it at once
		if out, err := s.Release(bg, key, tok); err != nil || out != store.OK {
			return fmt.Errorf("release by a holder: %v, %v", out, err)
		}
		return nil
	}))
	require.LessOrEqual(t, most.Load(), int64(places), "holders at once")
	require.Positive(t, grants.Load(), "no contender got a place")
	mustBeFree(t, s, key)
}

// raise sets v to n unless it is already n or more.
func raise(v *atomic.Int64, n int64) {
	for m := v.Load(); n > m; m = v.Load() {
		if v.CompareAndSwap(m, n) {
			return
		}
	}
}

// testHoldersFence: the fences of a semaphore's grants strictly increase,
// whoever takes the place.
func testHoldersFence(t *testing.T, s store.Store) {
	key, fences := newKey("holders-fence"), []int64{0}
	var toks []string
	take := func() {
		tok := storekit.NewToken()
		g := acquire(t, s, store.Request{Key: key, Token: tok, TTL: longTTL, Holders: places, Fence: true}, true)
		fences, toks = append(fences, g.Fence), append(toks, tok)
	}
	for range places {
		take()
	}
	for i := range places {
		mustOutcome(t, "Release by a holder", store.OK)(s.Release(bg, key, toks[i]))
		take()
	}
	require.True(t, slices.IsSorted(fences) && len(slices.Compact(slices.Clone(fences))) == len(fences),
		"fences %v: positive and strictly increasing", fences)
}

// testHoldersInvalid: a semaphore cannot be reentrant, nor Holders negative;
// either is refused with store.ErrInvalid, taking nothing.
func testHoldersInvalid(t *testing.T, s store.Store) {
	for _, req := range []store.Request{{Holders: places, Reentrant: true}, {Holders: -1}} {
		req.Key, req.Token, req.TTL = newKey("holders-invalid"), storekit.NewToken(), longTTL
		_, err := s.Acquire(bg, req)
		require.ErrorIs(t, err, store.ErrInvalid, "Acquire(%+v)", req)
		mustBeFree(t, s, req.Key)
	}
}
