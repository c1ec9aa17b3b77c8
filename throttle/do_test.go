package throttle_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

// TestDoRunsWorkUnderLease checks the plain path: the work runs once with a
// context that carries the lease, Do returns the work's error unchanged, and
// the key is free afterwards whether the work failed or not.
func TestDoRunsWorkUnderLease(t *testing.T) {
	boom := errors.New("boom")
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			l := newLock(t, b.store, throttle.LockConfig{Name: "do", Mode: throttle.Exclusive, Fence: true})
			for _, want := range []error{nil, boom} {
				runs := 0
				err := l.Do(context.Background(), "job", func(ctx context.Context) error {
					runs++
					lease := throttle.LeaseFrom(ctx)
					if assert.NotNil(t, lease, "work context carries no lease") {
						assert.Equal(t, l.StoredKey("job"), lease.Key(), "lease key")
						assert.Positive(t, lease.Fence(), "fence")
						assert.Equal(t, 1, lease.Holds(), "holds")
						assert.Positive(t, lease.ValidFor(), "ValidFor")
						assert.LessOrEqual(t, lease.ValidFor(), lease.TTL(), "ValidFor")
					}
					assert.True(t, b.held(t, l.StoredKey("job")), "key not held while the work runs")
					return want
				})
				// The work's error must come back unwrapped.
				require.Equal(t, want, err, "Do")
				require.Equal(t, 1, runs, "work runs")
				require.False(t, b.held(t, l.StoredKey("job")), "key still held after Do returned")
			}
		})
	}
}

// TestDoCallerCancelled checks that cancelling the caller's context while the
// work runs cancels the work with the caller's error, not ErrLost, and that
// the key is still released (with a context that is no longer cancelled).
func TestDoCallerCancelled(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			l := newLock(t, b.store, throttle.LockConfig{Name: "do", Mode: throttle.Exclusive, TTL: 300 * time.Millisecond})
			ctx, cancel := context.WithCancel(context.Background())
			err := l.Do(ctx, "job", func(wctx context.Context) error {
				cancel()
				<-wctx.Done()
				return context.Cause(wctx)
			})
			isOnly(t, err, context.Canceled)
			require.False(t, b.held(t, l.StoredKey("job")), "key still held after a cancelled Do returned")
		})
	}
}

// TestDoErrorsAreDistinguishable provokes each failure of the lock API and
// checks that errors.Is / errors.As tell them apart.
func TestDoErrorsAreDistinguishable(t *testing.T) {
	b := redisBackend(t)
	c := throttle.LockConfig{Name: "errs", Mode: throttle.Exclusive, TTL: 2 * time.Second}
	l := newLock(t, b.store, c)
	ctx := context.Background()
	notRun := func(context.Context) error {
		assert.Fail(t, "work ran although the acquisition failed")
		return nil
	}

	t.Run("contended", func(t *testing.T) {
		lease, err := l.Acquire(ctx, "held")
		require.NoError(t, err)
		defer lease.Release(ctx)
		err = l.Do(ctx, "held", notRun)
		isOnly(t, err, throttle.ErrContended)
		var ce *throttle.ContendedError
		require.ErrorAs(t, err, &ce)
		require.Positive(t, ce.RetryAfter)
		require.LessOrEqual(t, ce.RetryAfter, c.TTL)
	})

	t.Run("context cancelled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		isOnly(t, l.Do(cctx, "free", notRun), context.Canceled)
	})

	t.Run("context deadline", func(t *testing.T) {
		dctx, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
		defer cancel()
		isOnly(t, l.Do(dctx, "free", notRun), context.DeadlineExceeded)
	})

	t.Run("not held", func(t *testing.T) {
		lease, err := l.Acquire(ctx, "released")
		require.NoError(t, err)
		require.NoError(t, lease.Release(ctx))
		isOnly(t, lease.Release(ctx), throttle.ErrNotHeld)
		isOnly(t, lease.Extend(ctx, time.Second), throttle.ErrNotHeld)

		lease, err = l.Acquire(ctx, "deleted")
		require.NoError(t, err)
		mustRedis(t, b.rdb.Del(ctx, lease.Key()).Err())
		isOnly(t, lease.Extend(ctx, time.Second), throttle.ErrNotHeld)
		isOnly(t, lease.Release(ctx), throttle.ErrNotHeld)
	})

	t.Run("lost", func(t *testing.T) {
		err := l.Do(ctx, "lost", func(wctx context.Context) error {
			mustRedis(t, b.rdb.Del(ctx, l.StoredKey("lost")).Err())
			<-wctx.Done()
			return nil
		})
		isOnly(t, err, throttle.ErrLost)
	})

	t.Run("lost, returned as the cause", func(t *testing.T) {
		err := l.Do(ctx, "lost-cause", func(wctx context.Context) error {
			mustRedis(t, b.rdb.Del(ctx, l.StoredKey("lost-cause")).Err())
			<-wctx.Done()
			return context.Cause(wctx)
		})
		isOnly(t, err, throttle.ErrLost)
		assert.Equal(t, 1, strings.Count(err.Error(), throttle.ErrLost.Error()), "the loss said once: %v", err)
	})

	t.Run("invalid", func(t *testing.T) {
		_, err := throttle.NewLock(b.store, throttle.LockConfig{Name: "bad", Mode: throttle.Exclusive, TTL: time.Microsecond})
		isOnly(t, err, store.ErrInvalid)
	})

	// Last: the store goes away.
	t.Run("store down", func(t *testing.T) {
		b.srv.Kill(t)
		err := l.Do(ctx, "any", notRun)
		isOnly(t, err, throttle.ErrStore)
		require.Error(t, errors.Unwrap(err), "want a store error with a cause")
		require.ErrorContains(t, err, "store acquire", "want a store error for acquire")
	})
}

// TestDoMaxHold checks that LockConfig.MaxHold ends work that holds the key
// too long, with cause ErrLost, no earlier than the cap, and that the key is
// released.
func TestDoMaxHold(t *testing.T) {
	const lease, maxHold = 200 * time.Millisecond, 700 * time.Millisecond
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			l := newLock(t, b.store, throttle.LockConfig{Name: "cap", Mode: throttle.Exclusive, TTL: lease, MaxHold: maxHold})
			var held time.Duration
			err := l.Do(context.Background(), "job", func(ctx context.Context) error {
				start := time.Now()
				select {
				case <-ctx.Done():
					held = time.Since(start)
				case <-time.After(maxHold + 10*time.Second):
					assert.Fail(t, "MaxHold did not end the work")
				}
				return nil
			})
			isOnly(t, err, throttle.ErrLost)
			assert.ErrorContains(t, err, "hold limit", "the error does not name the hold limit")
			require.GreaterOrEqual(t, held, maxHold-50*time.Millisecond, "work cancelled before MaxHold")
			require.False(t, b.held(t, l.StoredKey("job")), "key still held after Do returned")
		})
	}
}

// TestDoPanicReleases checks that a panic in the work stops the refresher,
// releases the key and reaches the caller unchanged.
func TestDoPanicReleases(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			l := newLock(t, b.store, throttle.LockConfig{Name: "panic", Mode: throttle.Exclusive, TTL: 300 * time.Millisecond})
			require.PanicsWithValue(t, "work panicked", func() {
				_ = l.Do(context.Background(), "job", func(context.Context) error { panic("work panicked") })
			}, "want the work's panic")
			require.False(t, b.held(t, l.StoredKey("job")), "key still held after the work panicked")
		})
	}
}

// TestDoHoldsForTTL checks that Do holds its key for the Lock's TTL in
// every mode, refreshing it while the work runs: a Dedupe Lock's Do is
// still one job at a time.
func TestDoHoldsForTTL(t *testing.T) {
	b := memBackend(t)
	for _, mode := range []throttle.Mode{throttle.Dedupe, throttle.Cooldown, throttle.Exclusive} {
		t.Run(mode.String(), func(t *testing.T) {
			l := newLock(t, b.store, throttle.LockConfig{Name: "ttl-" + mode.String(), Mode: mode, TTL: time.Minute})
			err := l.Do(context.Background(), "job", func(ctx context.Context) error {
				assert.Equal(t, time.Minute, throttle.LeaseFrom(ctx).TTL())
				_, err := l.Acquire(context.Background(), "job")
				assert.ErrorIs(t, err, throttle.ErrContended, "a second holder while Do runs")
				return nil
			})
			require.NoError(t, err)
			require.False(t, b.held(t, l.StoredKey("job")), "key still held after Do returned")
		})
	}
}
