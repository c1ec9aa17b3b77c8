package throttle_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle"
)

// TestDoRunsWorkUnderLease checks the plain path: the work runs once with a
// context that carries the lease, Do returns the work's error unchanged, and
// the key is free afterwards whether the work failed or not.
func TestDoRunsWorkUnderLease(t *testing.T) {
	boom := errors.New("boom")
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			l := newLimiter(t, b.store, throttle.Policy{Name: "do", Mode: throttle.Exclusive, Fence: true})
			for _, want := range []error{nil, boom} {
				runs := 0
				err := l.Do(context.Background(), "job", func(ctx context.Context) error {
					runs++
					lease := throttle.LeaseFrom(ctx)
					switch {
					case lease == nil:
						t.Error("work context carries no lease")
					case lease.Key() != l.StoredKey("job"):
						t.Errorf("lease key %q, want %q", lease.Key(), l.StoredKey("job"))
					case lease.Fence() <= 0:
						t.Errorf("fence %d, want > 0", lease.Fence())
					case lease.Holds() != 1:
						t.Errorf("holds %d, want 1", lease.Holds())
					case lease.ValidFor() <= 0 || lease.ValidFor() > lease.TTL():
						t.Errorf("ValidFor %v outside (0, %v]", lease.ValidFor(), lease.TTL())
					}
					if !b.held(t, l.StoredKey("job")) {
						t.Error("key not held while the work runs")
					}
					return want
				})
				if err != want { // the work's error must come back unwrapped
					t.Fatalf("Do = %v, want %v", err, want)
				}
				if runs != 1 {
					t.Fatalf("work ran %d times", runs)
				}
				if b.held(t, l.StoredKey("job")) {
					t.Fatal("key still held after Do returned")
				}
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
			l := newLimiter(t, b.store, throttle.Policy{Name: "do", Mode: throttle.Exclusive, LeaseTTL: 300 * time.Millisecond})
			ctx, cancel := context.WithCancel(context.Background())
			err := l.Do(ctx, "job", func(wctx context.Context) error {
				cancel()
				<-wctx.Done()
				return context.Cause(wctx)
			})
			isOnly(t, err, context.Canceled)
			if b.held(t, l.StoredKey("job")) {
				t.Fatal("key still held after a cancelled Do returned")
			}
		})
	}
}

// TestDoErrorsAreDistinguishable provokes each failure of the lock API and
// checks that errors.Is / errors.As tell them apart.
func TestDoErrorsAreDistinguishable(t *testing.T) {
	b := redisBackend(t)
	p := throttle.Policy{Name: "errs", Mode: throttle.Exclusive, LeaseTTL: 2 * time.Second}
	l := newLimiter(t, b.store, p)
	ctx := context.Background()
	notRun := func(context.Context) error {
		t.Error("work ran although the acquisition failed")
		return nil
	}

	t.Run("contended", func(t *testing.T) {
		lease, err := l.Acquire(ctx, "held")
		if err != nil {
			t.Fatal(err)
		}
		defer lease.Release(ctx)
		err = l.Do(ctx, "held", notRun)
		isOnly(t, err, throttle.ErrContended)
		var ce *throttle.ContendedError
		if !errors.As(err, &ce) {
			t.Fatalf("%v is not a *ContendedError", err)
		}
		if ce.RetryAfter <= 0 || ce.RetryAfter > p.LeaseTTL {
			t.Fatalf("RetryAfter %v outside (0, %v]", ce.RetryAfter, p.LeaseTTL)
		}
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
		if err != nil {
			t.Fatal(err)
		}
		if err := lease.Release(ctx); err != nil {
			t.Fatal(err)
		}
		isOnly(t, lease.Release(ctx), throttle.ErrNotHeld)
		isOnly(t, lease.Extend(ctx, time.Second), throttle.ErrNotHeld)

		lease, err = l.Acquire(ctx, "deleted")
		if err != nil {
			t.Fatal(err)
		}
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

	t.Run("invalid", func(t *testing.T) {
		_, err := throttle.New(b.store, throttle.Policy{Name: "bad", LeaseTTL: time.Microsecond})
		isOnly(t, err, throttle.ErrInvalid)
	})

	// Last: the store goes away.
	t.Run("store down", func(t *testing.T) {
		b.srv.Kill(t)
		err := l.Do(ctx, "any", notRun)
		if !errors.Is(err, throttle.ErrStore) {
			t.Fatalf("Do = %v, want ErrStore", err)
		}
		for _, other := range []error{throttle.ErrContended, throttle.ErrLost, throttle.ErrNotHeld} {
			if errors.Is(err, other) {
				t.Fatalf("%v also matches %v", err, other)
			}
		}
		if errors.Unwrap(err) == nil || !strings.Contains(err.Error(), "store acquire") {
			t.Fatalf("%v: want a store error for acquire with a cause", err)
		}
	})
}

// TestDoMaxHold checks that Policy.MaxHold ends work that holds the key too
// long, with cause ErrLost, no earlier than the cap, and that the key is
// released.
func TestDoMaxHold(t *testing.T) {
	const lease, maxHold = 200 * time.Millisecond, 700 * time.Millisecond
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			l := newLimiter(t, b.store, throttle.Policy{Name: "cap", Mode: throttle.Exclusive, LeaseTTL: lease, MaxHold: maxHold})
			var held time.Duration
			err := l.Do(context.Background(), "job", func(ctx context.Context) error {
				start := time.Now()
				select {
				case <-ctx.Done():
					held = time.Since(start)
				case <-time.After(maxHold + 10*time.Second):
					t.Error("MaxHold did not end the work")
				}
				return nil
			})
			isOnly(t, err, throttle.ErrLost)
			if !strings.Contains(err.Error(), "hold limit") {
				t.Errorf("error %q does not name the hold limit", err)
			}
			if held < maxHold-50*time.Millisecond {
				t.Fatalf("work cancelled after %v, before MaxHold %v", held, maxHold)
			}
			if b.held(t, l.StoredKey("job")) {
				t.Fatal("key still held after Do returned")
			}
		})
	}
}

// TestDoPanicReleases checks that a panic in the work stops the refresher,
// releases the key and reaches the caller unchanged.
func TestDoPanicReleases(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			l := newLimiter(t, b.store, throttle.Policy{Name: "panic", Mode: throttle.Exclusive, LeaseTTL: 300 * time.Millisecond})
			func() {
				defer func() {
					if r := recover(); r != "work panicked" {
						t.Fatalf("recovered %v, want the work's panic", r)
					}
				}()
				_ = l.Do(context.Background(), "job", func(context.Context) error { panic("work panicked") })
			}()
			if b.held(t, l.StoredKey("job")) {
				t.Fatal("key still held after the work panicked")
			}
		})
	}
}
