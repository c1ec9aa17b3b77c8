package throttle_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

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
			c := throttle.LockConfig{Name: "keepalive", Mode: throttle.Exclusive, TTL: ttl}
			holder := newLock(t, b.store, c)
			contender := newLock(t, b.store, c)
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
			require.NoError(t, err)
			require.GreaterOrEqual(t, tries, 10, "contender tries")
			require.False(t, b.held(t, holder.StoredKey("job")), "key still held after Do returned")
			s := holder.Stats()
			require.Zero(t, s.Lost, "holder stats %+v", s)
			require.Equal(t, uint64(1), s.Acquired, "holder stats %+v", s)
		})
	}
}

// TestKeepAliveStopIsIdempotent checks the stop function of KeepAlive on its
// own: calling it twice is harmless, it cancels the work context with a
// plain context.Canceled (not ErrLost), and the lease can be released after.
// It runs in a synctest bubble: a 30 ms lease outlives 100 ms of work only
// by its refreshes, which a loaded machine must not be able to delay.
func TestKeepAliveStopIsIdempotent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memBackend(t)
		l := newLock(t, b.store, throttle.LockConfig{Name: "stop", Mode: throttle.Exclusive, TTL: 30 * time.Millisecond})
		ctx := context.Background()
		lease, err := l.Acquire(ctx, "x")
		require.NoError(t, err)
		wctx, stop := lease.KeepAlive(ctx)
		require.Same(t, lease, throttle.LeaseFrom(wctx), "work context does not carry the lease")
		time.Sleep(100 * time.Millisecond) // a few refreshes
		require.NoError(t, wctx.Err(), "work cancelled while the lease was refreshed: %v", context.Cause(wctx))
		stop()
		stop()
		require.ErrorIs(t, context.Cause(wctx), context.Canceled, "cause after stop")
		require.NotErrorIs(t, context.Cause(wctx), throttle.ErrLost, "cause after stop")
		require.NoError(t, lease.Release(ctx), "release after stop")
	})
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
			l := newLock(t, b.store, throttle.LockConfig{Name: "lost", Mode: throttle.Exclusive, TTL: ttl})
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
			require.ErrorIs(t, err, throttle.ErrLost, "Do")
			// The work's own failures are not what came back.
			for _, failure := range []string{"work context", "cause =", "cancelled before"} {
				require.NotContains(t, err.Error(), failure)
			}
			t.Logf("work cancelled %v after the key was taken (refresh interval %v)", latency, ttl/3)
			got, gerr := b.rdb.Get(context.Background(), key).Result()
			if errors.Is(gerr, redis.Nil) {
				got = ""
			} else {
				require.NoError(t, gerr)
			}
			require.Equal(t, want, got, "the key after Do (a lost holder must not free or change it)")
			require.Equal(t, uint64(1), l.Stats().Lost, "Stats.Lost")
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
	l := newLock(t, store, throttle.LockConfig{Name: "lost", Mode: throttle.Exclusive, TTL: ttl})
	err := l.Do(context.Background(), "job", func(wctx context.Context) error {
		skew.Store(int64(time.Hour))
		select {
		case <-wctx.Done():
		case <-time.After(ttl + 5*time.Second):
			return errors.New("work context not cancelled after the key expired")
		}
		return context.Cause(wctx)
	})
	require.ErrorIs(t, err, throttle.ErrLost, "Do")
}

func mustRedis(t *testing.T, err error) {
	t.Helper()
	require.NoError(t, err, "redis")
}
