package throttle_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// TestKeepAliveHoldsPastTTL runs work for more than three lease TTLs and
// checks that a contender is turned away the whole time (the refresher keeps
// extending the key) and that the key is gone once Do returns.
func TestKeepAliveHoldsPastTTL(t *testing.T) {
	const ttl, work = 400 * time.Millisecond, 1300 * time.Millisecond
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			p := throttle.Policy{Name: "keepalive", Mode: throttle.Exclusive, LeaseTTL: ttl}
			holder := newLimiter(t, b.store, p)
			contender := newLimiter(t, b.store, p)
			ctx := context.Background()
			tries := 0
			err := holder.Do(ctx, "job", func(wctx context.Context) error {
				start := time.Now()
				for time.Since(start) < work {
					if _, err := contender.Acquire(ctx, "job"); !errors.Is(err, throttle.ErrContended) {
						return fmt.Errorf("contender after %v: got %v, want ErrContended", time.Since(start), err)
					}
					if wctx.Err() != nil {
						return fmt.Errorf("work cancelled after %v: %v", time.Since(start), context.Cause(wctx))
					}
					tries++
					time.Sleep(20 * time.Millisecond)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if tries < 10 {
				t.Fatalf("contender tried only %d times", tries)
			}
			if b.held(t, holder.StoredKey("job")) {
				t.Fatal("key still held after Do returned")
			}
			if s := holder.Stats(); s.Lost != 0 || s.Acquired != 1 {
				t.Fatalf("holder stats %+v, want 1 acquired and 0 lost", s)
			}
		})
	}
}

// TestKeepAliveStopIsIdempotent checks the stop function of KeepAlive on its
// own: calling it twice is harmless, it cancels the work context with a
// plain context.Canceled (not ErrLost), and the lease can be released after.
func TestKeepAliveStopIsIdempotent(t *testing.T) {
	b := memBackend(t)
	l := newLimiter(t, b.store, throttle.Policy{Name: "stop", Mode: throttle.Exclusive, LeaseTTL: 30 * time.Millisecond})
	ctx := context.Background()
	lease, err := l.Acquire(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := lease.KeepAlive(ctx)
	if throttle.LeaseFrom(wctx) != lease {
		t.Fatal("work context does not carry the lease")
	}
	time.Sleep(100 * time.Millisecond) // a few refreshes
	if wctx.Err() != nil {
		t.Fatalf("work cancelled while the lease was refreshed: %v", context.Cause(wctx))
	}
	stop()
	stop()
	if !errors.Is(context.Cause(wctx), context.Canceled) || errors.Is(context.Cause(wctx), throttle.ErrLost) {
		t.Fatalf("cause after stop = %v, want context.Canceled", context.Cause(wctx))
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatalf("release after stop: %v", err)
	}
}

// TestLostLeaseCancelsWork takes the key away from a running Do in each way
// it can happen in Redis, and checks that the work's context is cancelled
// with cause ErrLost, that Do reports ErrLost, and that Do's release does not
// free a key somebody else holds now.
func TestLostLeaseCancelsWork(t *testing.T) {
	const ttl = 600 * time.Millisecond
	cases := []struct {
		name string
		// take makes the lease lost; it returns the value the key should
		// have once Do has returned ("" for none).
		take func(t *testing.T, b backend, key string) string
	}{
		{"DEL", func(t *testing.T, b backend, key string) string {
			mustRedis(t, b.rdb.Del(context.Background(), key).Err())
			return ""
		}},
		{"FLUSHALL", func(t *testing.T, b backend, key string) string {
			mustRedis(t, b.rdb.FlushAll(context.Background()).Err())
			return ""
		}},
		{"SET by another owner", func(t *testing.T, b backend, key string) string {
			mustRedis(t, b.rdb.Set(context.Background(), key, "intruder", time.Minute).Err())
			return "intruder"
		}},
		{"restart", func(t *testing.T, b backend, key string) string {
			b.srv.Restart(t)
			return ""
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := redisBackend(t)
			l := newLimiter(t, b.store, throttle.Policy{Name: "lost", Mode: throttle.Exclusive, LeaseTTL: ttl})
			key := l.StoredKey("job")
			var tookAt time.Time
			var latency time.Duration
			var want string
			err := l.Do(context.Background(), "job", func(wctx context.Context) error {
				time.Sleep(ttl / 2) // at least one refresh first
				if wctx.Err() != nil {
					return fmt.Errorf("cancelled before the key was taken: %v", context.Cause(wctx))
				}
				want = tc.take(t, b, key)
				tookAt = time.Now()
				select {
				case <-wctx.Done():
					latency = time.Since(tookAt)
				case <-time.After(ttl + 5*time.Second):
					return errors.New("work context not cancelled after the key was taken")
				}
				if cause := context.Cause(wctx); !errors.Is(cause, throttle.ErrLost) {
					return fmt.Errorf("cause = %v, want ErrLost", cause)
				}
				return nil
			})
			if err == nil || !errors.Is(err, throttle.ErrLost) {
				t.Fatalf("Do = %v, want an ErrLost error", err)
			}
			if strings.Contains(err.Error(), "work context") || strings.Contains(err.Error(), "cause =") ||
				strings.Contains(err.Error(), "cancelled before") {
				t.Fatal(err)
			}
			t.Logf("work cancelled %v after the key was taken (refresh interval %v)", latency, ttl/3)
			got, gerr := b.rdb.Get(context.Background(), key).Result()
			if errors.Is(gerr, redis.Nil) {
				got = ""
			} else if gerr != nil {
				t.Fatal(gerr)
			}
			if got != want {
				t.Fatalf("key holds %q after Do, want %q (a lost holder must not free or change it)", got, want)
			}
			if s := l.Stats(); s.Lost != 1 {
				t.Fatalf("Stats.Lost = %d, want 1", s.Lost)
			}
		})
	}
}

// TestLostLeaseCancelsWorkMemory is the memory store's version: the store's
// clock jumps past the lease, so the next refresh finds the key expired.
func TestLostLeaseCancelsWorkMemory(t *testing.T) {
	var skew atomic.Int64
	store := memstore.New(memstore.WithClock(func() time.Time {
		return time.Now().Add(time.Duration(skew.Load()))
	}))
	const ttl = 300 * time.Millisecond
	l := newLimiter(t, store, throttle.Policy{Name: "lost", Mode: throttle.Exclusive, LeaseTTL: ttl})
	err := l.Do(context.Background(), "job", func(wctx context.Context) error {
		skew.Store(int64(time.Hour))
		select {
		case <-wctx.Done():
		case <-time.After(ttl + 5*time.Second):
			return errors.New("work context not cancelled after the key expired")
		}
		return context.Cause(wctx)
	})
	if !errors.Is(err, throttle.ErrLost) {
		t.Fatalf("Do = %v, want ErrLost", err)
	}
}

func mustRedis(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("redis: %v", err)
	}
}
