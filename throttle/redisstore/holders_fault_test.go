package redisstore_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// churn is workers taking and releasing places of one key until stopped,
// each call bounded by a short timeout, counting the holders they know of
// and the most at once; a sampler counts the set's members likewise.
type churn struct {
	live, most, grants, members atomic.Int64
	stop                        chan struct{}
	wg                          sync.WaitGroup
}

func startChurn(s store.Store, c *redis.Client, key string) *churn {
	w := &churn{stop: make(chan struct{})}
	for range 8 {
		w.wg.Go(func() {
			for w.running() {
				w.once(s, key)
			}
		})
	}
	w.wg.Go(func() {
		for w.running() {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			if n, err := c.ZCard(ctx, key).Result(); err == nil {
				raiseTo(&w.members, n)
			}
			cancel()
			time.Sleep(2 * time.Millisecond)
		}
	})
	return w
}

func (w *churn) running() bool {
	select {
	case <-w.stop:
		return false
	default:
		return true
	}
}

// once takes a place, holds it briefly and releases it. A call that timed
// out may have taken a place all the same: its TTL frees it.
func (w *churn) once(s store.Store, key string) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req := placeReq(key, 2*time.Second)
	g, err := s.Acquire(ctx, req)
	if err != nil || !g.Acquired {
		time.Sleep(time.Millisecond)
		return
	}
	w.grants.Add(1)
	raiseTo(&w.most, w.live.Add(1))
	time.Sleep(time.Millisecond)
	w.live.Add(-1)
	_, _ = s.Release(ctx, key, req.Token)
}

func (w *churn) halt() {
	close(w.stop)
	w.wg.Wait()
}

func raiseTo(v *atomic.Int64, n int64) {
	for m := v.Load(); n > m; m = v.Load() {
		if v.CompareAndSwap(m, n) {
			return
		}
	}
}

// TestHoldersFaults: a semaphore of three places never has more than three
// holders while a holder's process is gone (it never releases), the Redis
// server is paused (SIGSTOP) with calls in flight, resumed, and restarted
// empty; after the restart the gone holder's place is free.
func TestHoldersFaults(t *testing.T) {
	srv := redistest.Start(t)
	s := redisstore.New(srv.Client(t))
	t.Cleanup(func() { _ = s.Close() })
	probe := srv.Client(t)
	ctx := context.Background()

	t.Run("paused", func(t *testing.T) {
		k := key(t)
		mustAcquire(t, s, placeReq(k, 300*time.Millisecond)) // its process is gone
		w := startChurn(s, probe, k)
		time.Sleep(100 * time.Millisecond)
		srv.Pause(t)
		time.Sleep(300 * time.Millisecond)
		before := w.grants.Load()
		srv.Resume(t)
		require.Eventually(t, func() bool { return w.grants.Load() > before }, 5*time.Second, 10*time.Millisecond,
			"no place granted after the server resumed")
		time.Sleep(300 * time.Millisecond)
		w.halt()
		require.LessOrEqual(t, w.most.Load(), int64(3), "holders at once, as the workers knew them")
		require.LessOrEqual(t, w.members.Load(), int64(3), "members of the set at once")
	})

	t.Run("restarted", func(t *testing.T) {
		k := key(t)
		gone := placeReq(k, time.Minute)
		mustAcquire(t, s, gone)
		w := startChurn(s, probe, k)
		time.Sleep(100 * time.Millisecond)
		srv.Restart(t)
		before := w.grants.Load()
		require.Eventually(t, func() bool { return w.grants.Load() > before }, 5*time.Second, 10*time.Millisecond,
			"no place granted after the server restarted")
		w.halt()
		require.LessOrEqual(t, w.members.Load(), int64(3), "members of the set at once")
		mustOutcome(t, store.Gone)(s.Release(ctx, k, gone.Token))
		// The workers' places are released, or end with their TTL.
		require.Eventually(t, func() bool { return probe.ZCard(ctx, k).Val() == 0 }, 5*time.Second, 10*time.Millisecond,
			"places left after the workers stopped")
		for range 3 {
			mustAcquire(t, s, placeReq(k, time.Minute))
		}
		g, err := s.Acquire(ctx, store.Request{Key: k, Token: storekit.NewToken(), TTL: time.Minute, Holders: 3})
		require.NoError(t, err)
		require.False(t, g.Acquired, "a fourth holder: %+v", g)
	})
}
