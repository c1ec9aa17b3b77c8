package memstore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

func signalled(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestWatchSignalsOnlyWhenFreed(t *testing.T) {
	s := New()
	req := store.Request{Key: "k", Token: "o", TTL: time.Minute, Reentrant: true}
	for range 2 {
		_, err := s.Acquire(bg, req)
		require.NoError(t, err)
	}
	ch1, stop1, err := s.Watch(bg, "k")
	require.NoError(t, err)
	ch2, stop2, err := s.Watch(bg, "k")
	require.NoError(t, err)
	other, stopOther, err := s.Watch(bg, "other")
	require.NoError(t, err)
	defer stopOther()

	outcome(t, store.HeldByOther)(s.Release(bg, "k", "x"))
	outcome(t, store.StillHeld)(s.Release(bg, "k", "o"))
	require.False(t, signalled(ch1) || signalled(ch2), "signalled while the key is still held")
	outcome(t, store.OK)(s.Release(bg, "k", "o"))
	require.True(t, signalled(ch1), "a waiter was not signalled when the key was freed")
	require.True(t, signalled(ch2), "a waiter was not signalled when the key was freed")
	require.False(t, signalled(other), "a waiter of another key was signalled")
	// Signals never block the store, even when nobody reads.
	for range 3 {
		acquire(t, s, "k", "a", time.Minute)
		outcome(t, store.OK)(s.Release(bg, "k", "a"))
	}
	stop1()
	stop1()
	acquire(t, s, "k", "a", time.Minute)
	outcome(t, store.OK)(s.Release(bg, "k", "a"))
	require.True(t, signalled(ch2), "stopping one waiter silenced another")
	stop2()
	_, _, watched := s.counts()
	require.Equal(t, 1, watched, "watched keys after stop (other)")
}

func TestWatchCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(bg)
	cancel()
	_, _, err := New().Watch(ctx, "k")
	require.ErrorIs(t, err, context.Canceled)
}

func TestLimiterWaitIsWokenByRelease(t *testing.T) {
	s := New()
	l, err := throttle.NewLock(s, throttle.LockConfig{Name: "wait", Wait: time.Minute,
		Backoff: func(int) time.Duration { return time.Hour }})
	require.NoError(t, err)
	first, err := l.Acquire(bg, "id")
	require.NoError(t, err)
	got := make(chan error, 1)
	go func() {
		lease, err := l.Acquire(bg, "id")
		if err == nil {
			err = lease.Release(bg)
		}
		got <- err
	}()
	time.Sleep(20 * time.Millisecond) // let the waiter start waiting; not required for correctness
	require.NoError(t, first.Release(bg))
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		require.Fail(t, "the waiter was not woken by the release (its backoff is an hour)")
	}
}
