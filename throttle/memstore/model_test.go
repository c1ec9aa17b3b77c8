package memstore

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle/store"
)

// modelLock is what TestStoreModel expects a key to hold.
type modelLock struct {
	token     string
	expires   time.Duration // since the start
	holds     int           // 0 for a plain lock
	reentrant bool
}

// lockModel is a plain map of what each key holds, on the test's clock.
type lockModel struct {
	locks map[string]modelLock
	now   func() time.Duration
}

func (m *lockModel) live(key string) (modelLock, bool) {
	l, ok := m.locks[key]
	if ok && l.expires <= m.now() {
		delete(m.locks, key)
		return modelLock{}, false
	}
	return l, ok
}

// acquire returns the grant the store must give, and updates the model.
func (m *lockModel) acquire(key, tok string, ttl time.Duration, reentrant bool) store.Grant {
	l, held := m.live(key)
	now := m.now()
	switch {
	case !held:
		m.locks[key] = modelLock{token: tok, expires: now + ttl, holds: b2i(reentrant), reentrant: reentrant}
		return store.Grant{Acquired: true, TTL: ttl, Holds: 1}
	case l.token != tok || l.reentrant != reentrant:
		return store.Grant{Remaining: l.expires - now}
	case !reentrant: // the holder's retry: granted as it stands
		return store.Grant{Acquired: true, TTL: l.expires - now, Holds: 1}
	}
	l.holds++
	l.expires = max(l.expires, now+ttl)
	m.locks[key] = l
	return store.Grant{Acquired: true, TTL: l.expires - now, Holds: l.holds}
}

func (m *lockModel) release(key, tok string) store.Outcome {
	l, held := m.live(key)
	switch {
	case !held:
		return store.Gone
	case l.token != tok:
		return store.HeldByOther
	case l.holds > 1:
		l.holds--
		m.locks[key] = l
		return store.StillHeld
	}
	delete(m.locks, key)
	return store.OK
}

func (m *lockModel) extend(key, tok string, ttl time.Duration) store.Outcome {
	l, held := m.live(key)
	switch {
	case !held:
		return store.Gone
	case l.token != tok:
		return store.HeldByOther
	case l.reentrant:
		l.expires = max(l.expires, m.now()+ttl)
	default:
		l.expires = m.now() + ttl
	}
	m.locks[key] = l
	return store.OK
}

// TestStoreModel drives a Store, on a fake clock, and a plain map with the
// same random acquisitions (plain and reentrant), releases, extensions and
// clock steps over a few keys and TTLs, and compares every answer.
func TestStoreModel(t *testing.T) {
	ttls := []time.Duration{time.Millisecond, 3 * time.Millisecond, 40 * time.Millisecond, time.Second}
	for seed := range uint64(8) {
		rng := rand.New(rand.NewPCG(seed, 99))
		clk := newFakeClock()
		start := clk.Now()
		s := New(WithClock(clk.Now), WithMaxKeys(1<<12))
		m := &lockModel{locks: map[string]modelLock{}, now: func() time.Duration { return clk.Now().Sub(start) }}
		for step := range 20_000 {
			key := "k" + strconv.Itoa(rng.IntN(24))
			tok := "t" + strconv.Itoa(rng.IntN(3))
			ttl := ttls[rng.IntN(len(ttls))]
			at := fmt.Sprintf("seed %d step %d: %s by %s", seed, step, key, tok)
			switch op := rng.IntN(10); {
			case op < 4:
				reentrant := rng.IntN(3) == 0
				g, err := s.Acquire(bg, store.Request{Key: key, Token: tok, TTL: ttl, Reentrant: reentrant})
				require.NoError(t, err, at)
				require.Equal(t, m.acquire(key, tok, ttl, reentrant), g, "Acquire %s", at)
			case op < 6:
				got, err := s.Release(bg, key, tok)
				require.NoError(t, err, at)
				require.Equal(t, m.release(key, tok), got, "Release %s", at)
			case op < 8:
				got, err := s.Extend(bg, key, tok, ttl)
				require.NoError(t, err, at)
				require.Equal(t, m.extend(key, tok, ttl), got, "Extend %s", at)
			default:
				clk.Advance(time.Duration(rng.IntN(4)) * time.Millisecond) // whole milliseconds, as the store rounds
			}
		}
		// Everything expires: the store gives back every lock.
		clk.Advance(2 * time.Second)
		for i := range 64 {
			key := "late" + strconv.Itoa(i)
			acquire(t, s, key, "t", time.Millisecond)
			outcome(t, store.OK)(s.Release(bg, key, "t"))
		}
		locks, _, _ := s.counts()
		require.LessOrEqual(t, locks, 24, "seed %d: locks stored after all expired", seed)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
