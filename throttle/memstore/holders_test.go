package memstore

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle/store"
)

func place(key, tok string, ttl time.Duration, n int) store.Request {
	return store.Request{Key: key, Token: tok, TTL: ttl, Holders: n}
}

// TestHoldersCountAsKeys: each holder counts as one key against the store's
// bound, shared with plain locks; a holder that does not fit fails with
// errFull and writes nothing; expired holders are swept for a new entry.
func TestHoldersCountAsKeys(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now), WithMaxKeys(4))
	for i := range 3 {
		g, err := s.Acquire(bg, place("sem", "t"+strconv.Itoa(i), time.Second, 10))
		require.NoError(t, err)
		require.True(t, g.Acquired && g.Holders == i+1, "holder %d: %+v", i, g)
	}
	acquire(t, s, "lock", "t", time.Minute)
	_, err := s.Acquire(bg, place("sem", "t3", time.Second, 10))
	require.ErrorIs(t, err, errFull, "a holder beyond the bound")
	_, err = s.Acquire(bg, place("other", "t", time.Second, 10))
	require.ErrorIs(t, err, errFull, "a new semaphore beyond the bound")
	_, err = s.Acquire(bg, store.Request{Key: "lock2", Token: "t", TTL: time.Second})
	require.ErrorIs(t, err, errFull, "a plain lock beyond the bound")
	g, err := s.Acquire(bg, place("sem", "t0", time.Second, 10))
	require.NoError(t, err)
	require.True(t, g.Acquired && g.Holders == 3, "a holder's retry on a full store: %+v", g)
	locks, _, _ := s.counts()
	require.Equal(t, 4, locks, "keys counted: three holders and a lock")

	outcome(t, store.OK)(s.Release(bg, "sem", "t1"))
	require.True(t, acquire(t, s, "lock2", "t", time.Minute).Acquired, "a released holder's room reused")
	clk.Advance(time.Second)
	// The expired holders are swept for a new plain lock.
	require.True(t, acquire(t, s, "lock3", "t", time.Minute).Acquired, "a lock after the holders expired")
	locks, _, _ = s.counts()
	require.Equal(t, 3, locks, "keys counted after the sweep")
	outcome(t, store.Gone)(s.Release(bg, "sem", "t0"))
}

// TestHoldersSampled: expired holders of semaphores nobody touches again
// leave the count as new holders come, without a full store.
func TestHoldersSampled(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now), WithMaxKeys(1<<10))
	for i := range 200 {
		_, err := s.Acquire(bg, place("{p:"+strconv.Itoa(i)+"}", "t", time.Second, 2))
		require.NoError(t, err)
	}
	clk.Advance(2 * time.Second)
	for i := range 200 {
		_, err := s.Acquire(bg, place("{q:"+strconv.Itoa(i)+"}", "t", time.Minute, 2))
		require.NoError(t, err)
	}
	locks, _, _ := s.counts()
	require.Less(t, locks, 300, "expired holders left counted")
}

// TestHoldersKind: a semaphore keeps no record, and a plain acquisition
// learns when its last holder's time ends.
func TestHoldersKind(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now))
	for i, ttl := range []time.Duration{time.Second, 3 * time.Second} {
		_, err := s.Acquire(bg, place("sem", "t"+strconv.Itoa(i), ttl, 2))
		require.NoError(t, err)
	}
	outcome(t, store.HeldByOther)(s.Record(bg, "sem", "t0", []byte("r"), time.Minute))
	require.Equal(t, store.Grant{Remaining: 3 * time.Second}, acquire(t, s, "sem", "t0", time.Second), "a plain lock on a semaphore")
	g, err := s.Acquire(bg, place("sem", "t2", time.Second, 2))
	require.NoError(t, err)
	require.Equal(t, store.Grant{Remaining: time.Second, Holders: 2}, g, "a full semaphore")
	outcome(t, store.OK)(s.Extend(bg, "sem", "t0", 5*time.Second))
	require.Equal(t, store.Grant{Remaining: 5 * time.Second}, acquire(t, s, "sem", "x", time.Second), "after Extend")
}
