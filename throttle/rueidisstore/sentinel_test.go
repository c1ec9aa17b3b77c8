package rueidisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/rueidisstore"
	"github.com/go-throttle/throttle/throttle/store"
	"github.com/go-throttle/throttle/throttle/storetest"

	"github.com/stretchr/testify/require"
)

// sentinelStore returns a store on a rueidis Sentinel client of d.
func sentinelStore(t *testing.T, d *redistest.Sentinel) *redisstore.Store {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:  d.Addrs,
		Sentinel:     rueidis.SentinelOption{MasterSet: redistest.SentinelMaster},
		DisableCache: true,
	})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	s := rueidisstore.New(c)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestSentinel runs the store through a rueidis Sentinel client on a real
// master, replica and three sentinels: the conformance suite, then a forced
// failover (SENTINEL FAILOVER) after which a lock taken before it, once the
// replica had it, is still held on the new master, and new keys are granted
// there without a new client.
func TestSentinel(t *testing.T) {
	d := redistest.StartSentinel(t)
	t.Run("conformance", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store { return sentinelStore(t, d) })
	})

	t.Run("forced-failover", func(t *testing.T) {
		s := sentinelStore(t, d)
		ctx := context.Background()
		master, replica := d.Master(), d.Replica()
		held := store.Request{Key: key(t), Token: storekit.NewToken(), TTL: time.Minute}
		mustAcquire(t, s, held)
		redistest.WaitInSync(t, master, replica)
		if got := d.Failover(t); got != replica {
			t.Fatalf("Failover promoted %s, want the replica %s", got.Addr, replica.Addr)
		}
		// rueidis follows the sentinels' switch: a fresh key is
		// granted on the new master within a generous bound.
		fresh := store.Request{Key: key(t), Token: storekit.NewToken(), TTL: time.Minute}
		deadline := time.Now().Add(30 * time.Second)
		for {
			g, err := s.Acquire(ctx, fresh)
			if err == nil && g.Acquired {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no grant after the failover: %+v, %v", g, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		onNew := redis.NewClient(&redis.Options{Addr: replica.Addr})
		defer func() { _ = onNew.Close() }()
		if n, err := onNew.Exists(ctx, fresh.Key, held.Key).Result(); err != nil || n != 2 {
			t.Fatalf("the new master holds %d of the two locks (%v)", n, err)
		}
		g, err := s.Acquire(ctx, store.Request{Key: held.Key, Token: storekit.NewToken(), TTL: time.Minute})
		require.NoError(t, err, "a contender for the lock held across the failover got %+v, %v", g, err)
		require.False(t, g.Acquired, "a contender for the lock held across the failover got %+v, %v", g, err)
		if out, err := s.Release(ctx, held.Key, held.Token); err != nil || out != store.OK {
			t.Fatalf("release on the new master: %v, %v", out, err)
		}
	})
}
