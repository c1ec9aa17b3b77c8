package throttle_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

// pollOnly hides a store's Notifier, so that a Limiter over it can only poll.
type pollOnly struct{ throttle.Store }

// holdFor takes id under l and releases it after d, in the background; it
// returns a channel that is closed right before the release is sent.
func holdFor(t *testing.T, l *throttle.Limiter, id string, d time.Duration) <-chan struct{} {
	t.Helper()
	lease, err := l.Acquire(context.Background(), id)
	if err != nil {
		t.Fatalf("holder: %v", err)
	}
	releasing, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(d)
		close(releasing)
		if err := lease.Release(context.Background()); err != nil {
			t.Errorf("holder release: %v", err)
		}
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
			if _, ok := b.store.(store.Notifier); !ok {
				t.Fatalf("%T is not a Notifier", b.store)
			}
			p := throttle.Policy{Name: "wake", Mode: throttle.Exclusive, LeaseTTL: 30 * time.Second}
			holder := newLimiter(t, b.store, p)
			p.Wait, p.Backoff = 10*time.Second, throttle.Fixed(5*time.Second)
			waiter := newLimiter(t, b.store, p)

			released := holdFor(t, holder, "job", 100*time.Millisecond)
			start := time.Now()
			lease, err := waiter.Acquire(context.Background(), "job")
			took := time.Since(start)
			if err != nil {
				t.Fatalf("waiter: %v", err)
			}
			defer lease.Release(context.Background())
			select {
			case <-released:
			default:
				t.Fatal("waiter acquired while the holder still held the key")
			}
			t.Logf("acquired %v after the wait began (holder released at ~100ms)", took)
			if took >= 4*time.Second {
				t.Fatalf("waiter took %v: it slept its 5s backoff instead of waking on release", took)
			}
		})
	}
}

// TestWaitPollsWithoutNotifier checks the fallback: a store that cannot
// notify is polled with the backoff, and the waiter still gets the key.
func TestWaitPollsWithoutNotifier(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			store := pollOnly{b.store}
			p := throttle.Policy{Name: "poll", Mode: throttle.Exclusive, LeaseTTL: 30 * time.Second}
			holder := newLimiter(t, store, p)
			p.Wait, p.Backoff = 10*time.Second, throttle.Linear(10*time.Millisecond, 50*time.Millisecond)
			waiter := newLimiter(t, store, p)

			released := holdFor(t, holder, "job", 150*time.Millisecond)
			lease, err := waiter.Acquire(context.Background(), "job")
			if err != nil {
				t.Fatalf("waiter: %v", err)
			}
			defer lease.Release(context.Background())
			select {
			case <-released:
			default:
				t.Fatal("waiter acquired while the holder still held the key")
			}
			if s := waiter.Stats(); s.Rejected < 2 {
				t.Fatalf("waiter was rejected %d times; polling should have retried", s.Rejected)
			}
		})
	}
}

// TestWaitBounds checks how a waiting acquisition ends when the key stays
// held: with ErrContended when Policy.Wait runs out, with the context's
// error when the context ends first, and never by running the work.
func TestWaitBounds(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			p := throttle.Policy{Name: "bounds", Mode: throttle.Exclusive, LeaseTTL: 30 * time.Second}
			holder := newLimiter(t, b.store, p)
			lease, err := holder.Acquire(context.Background(), "job")
			if err != nil {
				t.Fatal(err)
			}
			defer lease.Release(context.Background())

			t.Run("Policy.Wait runs out", func(t *testing.T) {
				p := p
				p.Wait = 300 * time.Millisecond
				w := newLimiter(t, b.store, p)
				start := time.Now()
				_, err := w.Acquire(context.Background(), "job")
				took := time.Since(start)
				isOnly(t, err, throttle.ErrContended)
				var ce *throttle.ContendedError
				if !errors.As(err, &ce) || ce.RetryAfter <= 0 || ce.RetryAfter > p.LeaseTTL {
					t.Fatalf("%v: want a *ContendedError with RetryAfter in (0, %v]", err, p.LeaseTTL)
				}
				if took < p.Wait-10*time.Millisecond || took > p.Wait+5*time.Second {
					t.Fatalf("gave up after %v, want about %v", took, p.Wait)
				}
			})

			t.Run("context deadline first", func(t *testing.T) {
				p := p
				p.Wait = time.Minute
				w := newLimiter(t, b.store, p)
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				defer cancel()
				start := time.Now()
				err := w.Do(ctx, "job", func(context.Context) error {
					t.Error("work ran while the key was held")
					return nil
				})
				took := time.Since(start)
				isOnly(t, err, context.DeadlineExceeded)
				if took < 290*time.Millisecond || took > 5*time.Second {
					t.Fatalf("gave up after %v, want about 300ms", took)
				}
			})

			t.Run("context cancelled while waiting", func(t *testing.T) {
				p := p
				p.Wait = time.Minute
				p.Backoff = throttle.Fixed(time.Hour) // only a wake-up or the context can end it
				w := newLimiter(t, b.store, p)
				ctx, cancel := context.WithCancel(context.Background())
				time.AfterFunc(100*time.Millisecond, cancel)
				_, err := w.Acquire(ctx, "job")
				isOnly(t, err, context.Canceled)
			})
		})
	}
}

// TestWaitBackoffShapes checks the three backoffs stay within their
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
		{"Fixed", throttle.Fixed(base),
			func(int) time.Duration { return base },
			func(int) time.Duration { return base + base/4 }},
		{"Linear", throttle.Linear(base, 100*time.Millisecond),
			func(a int) time.Duration { return min(100*time.Millisecond, base*time.Duration(a)) },
			func(a int) time.Duration { return min(100*time.Millisecond, base*time.Duration(a)) + base/4 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, attempt := range []int{1, 2, 3, 5, 8, 30, 1000} {
				seen := map[time.Duration]bool{}
				for range 200 {
					d := tc.b(attempt)
					if d < tc.lo(attempt) || d > tc.hi(attempt) {
						t.Fatalf("attempt %d: %v outside [%v, %v]", attempt, d, tc.lo(attempt), tc.hi(attempt))
					}
					seen[d] = true
				}
				if len(seen) < 2 {
					t.Fatalf("attempt %d: no jitter", attempt)
				}
			}
		})
	}
}
