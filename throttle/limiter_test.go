package throttle_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// errDown is the error of a store whose server is gone: the call changed
// nothing, so the limiter has nothing to clean up after it.
var errDown = fmt.Errorf("store is down: %w", store.ErrNotApplied)

// brokenStore fails every call, as a store does whose server is gone.
type brokenStore struct{}

func (brokenStore) Acquire(context.Context, store.Request) (store.Grant, error) {
	return store.Grant{}, errDown
}
func (brokenStore) Release(context.Context, string, string) (store.Outcome, error) {
	return 0, errDown
}
func (brokenStore) Extend(context.Context, string, string, time.Duration) (store.Outcome, error) {
	return 0, errDown
}

// switchStore is a working store that can be switched off, to test what a
// Lock does while its store fails and after it recovers.
type switchStore struct {
	store.Store
	down  atomic.Bool
	calls atomic.Int64
}

func (s *switchStore) Acquire(ctx context.Context, req store.Request) (store.Grant, error) {
	s.calls.Add(1)
	if s.down.Load() {
		return store.Grant{}, errDown
	}
	return s.Store.Acquire(ctx, req)
}

func (s *switchStore) Release(ctx context.Context, key, token string) (store.Outcome, error) {
	if s.down.Load() {
		return 0, errDown
	}
	return s.Store.Release(ctx, key, token)
}

func (s *switchStore) Extend(ctx context.Context, key, token string, ttl time.Duration) (store.Outcome, error) {
	if s.down.Load() {
		return 0, errDown
	}
	return s.Store.Extend(ctx, key, token, ttl)
}

// hangStore never answers until the context ends, like a Redis that
// accepted the connection and went silent.
type hangStore struct{ brokenStore }

func (hangStore) Acquire(ctx context.Context, _ store.Request) (store.Grant, error) {
	<-ctx.Done()
	return store.Grant{}, ctx.Err()
}

func TestAcquireContended(t *testing.T) {
	ctx := context.Background()
	l := newLock(t, memstore.New(), throttle.LockConfig{Name: "submit", TTL: time.Minute})
	lease, err := l.Acquire(ctx, "42")
	require.NoError(t, err)
	assert.Equal(t, "throttle:{submit:42}", lease.Key())
	assert.Equal(t, time.Minute, lease.TTL())
	assert.Positive(t, lease.ValidFor())

	_, err = l.Acquire(ctx, "42")
	require.ErrorIs(t, err, throttle.ErrContended, "second acquire")
	var ce *throttle.ContendedError
	require.ErrorAs(t, err, &ce)
	assert.Positive(t, ce.RetryAfter)
	assert.LessOrEqual(t, ce.RetryAfter, time.Minute)
	require.NotErrorIs(t, err, throttle.ErrStore, "a held key must not look like a store error")

	_, err = l.Acquire(ctx, "43")
	require.NoError(t, err, "another id")
	require.NoError(t, lease.Release(ctx))
	require.ErrorIs(t, lease.Release(ctx), throttle.ErrNotHeld, "second release")
	_, err = l.Acquire(ctx, "42")
	require.NoError(t, err, "after release")
	s := l.Stats()
	assert.Equal(t, uint64(3), s.Acquired, "Stats %+v", s)
	assert.Equal(t, uint64(1), s.Rejected, "Stats %+v", s)
}

func TestAcquireCanceledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l := newLock(t, memstore.New(), throttle.LockConfig{Name: "submit"})
	_, err := l.Acquire(ctx, "1")
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, throttle.ErrStore)
}

func TestAcquireStoreTimeout(t *testing.T) {
	l := newLock(t, hangStore{}, throttle.LockConfig{Name: "submit", TTL: 200 * time.Millisecond,
		Options: throttle.Options{Timeout: 20 * time.Millisecond}})
	done := make(chan error, 1)
	go func() {
		_, err := l.Acquire(context.Background(), "1")
		done <- err
	}()
	select {
	case err := <-done:
		// The caller's context did not end: the error is the store's, and
		// matches no context error (each error matches one sentinel).
		require.ErrorIs(t, err, throttle.ErrStore)
		require.NotErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorContains(t, err, "answered no call", "want a store error saying that the store was silent")
	case <-time.After(5 * time.Second):
		require.Fail(t, "a silent store was not bounded by Options.Timeout")
	}
}

func TestAdmitDecisions(t *testing.T) {
	ctx := context.Background()
	t.Run("contended", func(t *testing.T) {
		l := newLock(t, memstore.New(), throttle.LockConfig{Name: "submit", TTL: 3 * time.Second})
		lease, err := l.Admit(ctx, "u")
		require.NoError(t, err, "first")
		require.NotNil(t, lease, "first")
		_, err = l.Admit(ctx, "u")
		var ce *throttle.ContendedError
		require.ErrorAs(t, err, &ce, "duplicate")
		assert.Positive(t, ce.RetryAfter)
		assert.LessOrEqual(t, ce.RetryAfter, 3*time.Second)
	})
	t.Run("fail open", func(t *testing.T) {
		l := newLock(t, brokenStore{}, throttle.LockConfig{Name: "submit"})
		lease, err := l.Admit(ctx, "u")
		require.NoError(t, err, "want through unguarded")
		require.Nil(t, lease, "want through unguarded")
		s := l.Stats()
		assert.Equal(t, uint64(1), s.FailedOpen, "Stats %+v", s)
		assert.Equal(t, uint64(1), s.StoreErrors, "Stats %+v", s)
	})
	t.Run("fail closed", func(t *testing.T) {
		l := newLock(t, brokenStore{}, throttle.LockConfig{Name: "submit",
			Options: throttle.Options{WhenStoreFails: throttle.FailClosed}})
		lease, err := l.Admit(ctx, "u")
		require.Nil(t, lease)
		require.ErrorIs(t, err, throttle.ErrStore, "want a store error wrapping the store's")
		require.ErrorIs(t, err, errDown, "want a store error wrapping the store's")
		s := l.Stats()
		assert.Zero(t, s.FailedOpen, "Stats %+v", s)
		assert.Equal(t, uint64(1), s.StoreErrors, "Stats %+v", s)
	})
	t.Run("exclusive fails closed by default", func(t *testing.T) {
		l := newLock(t, brokenStore{}, throttle.LockConfig{Name: "sync", Mode: throttle.Exclusive})
		_, err := l.Admit(ctx, "u")
		require.ErrorIs(t, err, throttle.ErrStore)
	})
	t.Run("canceled", func(t *testing.T) {
		l := newLock(t, memstore.New(), throttle.LockConfig{Name: "submit"})
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := l.Admit(cctx, "u")
		require.ErrorIs(t, err, context.Canceled)
	})
}

func (brokenStore) Delete(context.Context, ...string) error { return errDown }
