package throttle_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

// pollOnly hides a store's Notifier, so that a Lock over it can only poll.
type pollOnly struct{ store.Store }

// holdFor takes id under l and releases it after d, in the background; it
// returns a channel that is closed right before the release is sent.
func holdFor(t *testing.T, l *throttle.Lock, id string, d time.Duration) <-chan struct{} {
	t.Helper()
	lease, err := l.Acquire(context.Background(), id)
	require.NoError(t, err, "holder")
	releasing, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(d)
		close(releasing)
		assert.NoError(t, lease.Release(context.Background()), "holder release")
	}()
	t.Cleanup(func() { <-done })
	return releasing
}

// TestWaitWakesOnRelease checks hand-over: a waiter whose backoff would
// sleep 5 s gets the key soon after the holder releases it, because the
// store tells it. Without the Notifier, a short polling backoff finds it too.
func TestWaitWakesOnRelease(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			require.Implements(t, (*store.Notifier)(nil), b.store)
			c := throttle.LockConfig{Name: "wake", Mode: throttle.Exclusive, TTL: 30 * time.Second}
			holder := newLock(t, b.store, c)
			c.Wait, c.Backoff = 10*time.Second, func(int) time.Duration { return 5 * time.Second }
			waiter := newLock(t, b.store, c)

			released := holdFor(t, holder, "job", 100*time.Millisecond)
			start := time.Now()
			lease, err := waiter.Acquire(context.Background(), "job")
			took := time.Since(start)
			require.NoError(t, err, "waiter")
			defer lease.Release(context.Background())
			select {
			case <-released:
			default:
				require.Fail(t, "waiter acquired while the holder still held the key")
			}
			t.Logf("acquired %v after the wait began (holder released at ~100ms)", took)
			require.Less(t, took, 4*time.Second, "the waiter slept its 5s backoff instead of waking on release")
		})
	}
}

// TestWaitPollsWithoutNotifier checks the fallback: a store that cannot
// notify is polled with the backoff, and the waiter still gets the key.
func TestWaitPollsWithoutNotifier(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			store := pollOnly{b.store}
			c := throttle.LockConfig{Name: "poll", Mode: throttle.Exclusive, TTL: 30 * time.Second}
			holder := newLock(t, store, c)
			c.Wait, c.Backoff = 10*time.Second, throttle.ExponentialJitter(10*time.Millisecond, 50*time.Millisecond)
			waiter := newLock(t, store, c)

			released := holdFor(t, holder, "job", 150*time.Millisecond)
			lease, err := waiter.Acquire(context.Background(), "job")
			require.NoError(t, err, "waiter")
			defer lease.Release(context.Background())
			select {
			case <-released:
			default:
				require.Fail(t, "waiter acquired while the holder still held the key")
			}
			require.GreaterOrEqual(t, waiter.Stats().Rejected, uint64(2), "waiter rejections: polling should have retried")
		})
	}
}

// TestWaitBounds checks how a waiting acquisition ends when the key stays
// held: with ErrContended when LockConfig.Wait runs out, with the context's
// error when the context ends first, and never by running the work.
func TestWaitBounds(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			c := throttle.LockConfig{Name: "bounds", Mode: throttle.Exclusive, TTL: 30 * time.Second}
			holder := newLock(t, b.store, c)
			lease, err := holder.Acquire(context.Background(), "job")
			require.NoError(t, err)
			defer lease.Release(context.Background())

			t.Run("LockConfig.Wait runs out", func(t *testing.T) {
				c := c
				c.Wait = 300 * time.Millisecond
				w := newLock(t, b.store, c)
				start := time.Now()
				_, err := w.Acquire(context.Background(), "job")
				took := time.Since(start)
				isOnly(t, err, throttle.ErrContended)
				var ce *throttle.ContendedError
				require.ErrorAs(t, err, &ce)
				require.Positive(t, ce.RetryAfter)
				require.LessOrEqual(t, ce.RetryAfter, c.TTL)
				require.GreaterOrEqual(t, took, c.Wait-10*time.Millisecond, "gave up before the wait")
				require.LessOrEqual(t, took, c.Wait+5*time.Second, "gave up long after the wait")
			})

			t.Run("context deadline first", func(t *testing.T) {
				c := c
				c.Wait = time.Minute
				w := newLock(t, b.store, c)
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				defer cancel()
				start := time.Now()
				err := w.Do(ctx, "job", func(context.Context) error {
					assert.Fail(t, "work ran while the key was held")
					return nil
				})
				took := time.Since(start)
				isOnly(t, err, context.DeadlineExceeded)
				require.GreaterOrEqual(t, took, 290*time.Millisecond, "gave up before the deadline")
				require.LessOrEqual(t, took, 5*time.Second, "gave up long after the deadline")
			})

			t.Run("context cancelled while waiting", func(t *testing.T) {
				c := c
				c.Wait = time.Minute
				c.Backoff = func(int) time.Duration { return time.Hour } // only a wake-up or the context can end it
				w := newLock(t, b.store, c)
				ctx, cancel := context.WithCancel(context.Background())
				time.AfterFunc(100*time.Millisecond, cancel)
				_, err := w.Acquire(ctx, "job")
				isOnly(t, err, context.Canceled)
			})
		})
	}
}

// TestWaitBackoffShapes checks the backoff stays within their
// documented ranges, with jitter (not all values equal).
func TestWaitBackoffShapes(t *testing.T) {
	const base, ceil = 10 * time.Millisecond, time.Second
	cases := []struct {
		name   string
		b      throttle.Backoff
		lo, hi func(attempt int) time.Duration
	}{
		{"ExponentialJitter", throttle.ExponentialJitter(base, ceil),
			func(int) time.Duration { return 1 },
			func(a int) time.Duration { return min(ceil, base<<min(a-1, 20)) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, attempt := range []int{1, 2, 3, 5, 8, 30, 1000} {
				seen := map[time.Duration]bool{}
				for range 200 {
					d := tc.b(attempt)
					require.GreaterOrEqual(t, d, tc.lo(attempt), "attempt %d", attempt)
					require.LessOrEqual(t, d, tc.hi(attempt), "attempt %d", attempt)
					seen[d] = true
				}
				require.GreaterOrEqual(t, len(seen), 2, "attempt %d: no jitter", attempt)
			}
		})
	}
}
