package memstore

import (
	"context"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

var bg = context.Background()

func acquire(t *testing.T, s *Store, key, tok string, ttl time.Duration) store.Grant {
	t.Helper()
	g, err := s.Acquire(bg, store.Request{Key: key, Token: tok, TTL: ttl})
	require.NoError(t, err, "Acquire(%q)", key)
	return g
}

func outcome(t *testing.T, want store.Outcome) func(store.Outcome, error) {
	return func(got store.Outcome, err error) {
		t.Helper()
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
}

func TestExpiryWithFakeClock(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now))
	require.True(t, acquire(t, s, "k", "a", time.Second).Acquired, "first acquire")
	clk.Advance(999 * time.Millisecond)
	g := acquire(t, s, "k", "b", time.Second)
	require.False(t, g.Acquired, "1ms before expiry")
	require.Equal(t, time.Millisecond, g.Remaining)
	outcome(t, store.OK)(s.Extend(bg, "k", "a", 2*time.Second))
	clk.Advance(time.Second)
	g = acquire(t, s, "k", "b", time.Second)
	require.False(t, g.Acquired, "after Extend")
	require.Equal(t, time.Second, g.Remaining)
	clk.Advance(time.Second)
	outcome(t, store.Gone)(s.Extend(bg, "k", "a", time.Second))
	outcome(t, store.Gone)(s.Release(bg, "k", "a"))
	require.True(t, acquire(t, s, "k", "b", time.Second).Acquired, "after expiry")
	outcome(t, store.HeldByOther)(s.Release(bg, "k", "a"))
}

func TestTTLRoundsUpToMillisecond(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now))
	acquire(t, s, "k", "a", 1500*time.Microsecond)
	clk.Advance(time.Microsecond)
	assert.Equal(t, 2*time.Millisecond, acquire(t, s, "k", "b", time.Second).Remaining,
		"1.5ms rounded up, then up again")
	clk.Advance(1999 * time.Microsecond)
	require.True(t, acquire(t, s, "k", "b", time.Second).Acquired, "after 2ms")
}

func TestReentryRefreshesTTL(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now))
	req := store.Request{Key: "k", Token: "owner", TTL: time.Second, Reentrant: true}
	_, err := s.Acquire(bg, req)
	require.NoError(t, err)
	clk.Advance(900 * time.Millisecond)
	g, err := s.Acquire(bg, req)
	require.NoError(t, err)
	require.Equal(t, 2, g.Holds, "re-entry")
	clk.Advance(900 * time.Millisecond)
	g = acquire(t, s, "k", "other", time.Second)
	require.False(t, g.Acquired, "1.8s after the first acquire")
	require.Equal(t, 100*time.Millisecond, g.Remaining)
	outcome(t, store.StillHeld)(s.Release(bg, "k", "owner"))
	clk.Advance(100 * time.Millisecond)
	outcome(t, store.Gone)(s.Release(bg, "k", "owner"))
}

func TestInvalidArguments(t *testing.T) {
	s := New()
	for _, req := range []store.Request{
		{Key: "k", Token: "t", TTL: 0},
		{Key: "k", Token: "t", TTL: -time.Second},
		{Key: "k", Token: "", TTL: time.Second},
	} {
		_, err := s.Acquire(bg, req)
		assert.ErrorIs(t, err, store.ErrInvalid, "Acquire(%+v)", req)
	}
	acquire(t, s, "k", "t", time.Second)
	_, err := s.Extend(bg, "k", "t", 0)
	require.ErrorIs(t, err, store.ErrInvalid, "Extend with ttl 0")
	locks, _, _ := s.counts()
	assert.Equal(t, 1, locks, "invalid requests must store nothing")
}

func TestExpiredEntriesAreSwept(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now))
	const n = 10000
	for i := range n {
		acquire(t, s, storekit.Key("p", "sweep", strconv.Itoa(i)), "t", time.Second)
	}
	clk.Advance(time.Second)
	// Fresh one-off keys: every insertion samples a few entries, so the
	// expired ones go away without anyone touching them again.
	for i := range 4 * n {
		key := storekit.Key("p", "fresh", strconv.Itoa(i))
		acquire(t, s, key, "u", time.Hour)
		outcome(t, store.OK)(s.Release(bg, key, "u"))
	}
	locks, _, _ := s.counts()
	assert.LessOrEqual(t, locks, n/10, "expired locks still stored after %d insertions", 4*n)
}

func TestHugeTTLDoesNotOverflow(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now))
	acquire(t, s, "k", "a", time.Duration(math.MaxInt64))
	clk.Advance(100 * 365 * 24 * time.Hour)
	g := acquire(t, s, "k", "b", time.Second)
	require.False(t, g.Acquired, "a lock with the largest TTL must still be held")
	require.Positive(t, g.Remaining)
	outcome(t, store.OK)(s.Extend(bg, "k", "a", time.Duration(math.MaxInt64)))
}

func TestTooManyHolds(t *testing.T) {
	s := New()
	req := store.Request{Key: "k", Token: "o", TTL: time.Minute, Reentrant: true}
	_, err := s.Acquire(bg, req)
	require.NoError(t, err)
	sh, tag := s.locate("k")
	_, i, held := sh.locks.get("k", tag, 0)
	require.True(t, held)
	sh.locks.at(i).l.holds = math.MaxInt32
	_, err = s.Acquire(bg, req)
	require.ErrorIs(t, err, store.ErrInvalid, "re-entry past the hold limit")
}
