package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// openNear is redistest.Open for this store.
func openNear(t testing.TB, addr, user string, opts ...redisstore.Option) *redisstore.Store {
	o := &redis.Options{Addr: addr, ContextTimeoutEnabled: true}
	if user != "" {
		o.Username, o.Password = user, "pw"
	}
	c := redis.NewClient(o)
	s := redisstore.New(c, opts...)
	t.Cleanup(func() { _ = s.Close(); _ = c.Close() })
	<-redisstore.ConfigChecked(s)
	return s
}

func TestNearCache(t *testing.T) { redistest.CheckNearCache(t, openNear) }

func TestNearCacheReleaseDelay(t *testing.T) { redistest.NearCacheDelay(t, openNear, false) }

// TestNearCacheCluster runs the near cache's checks on a Redis Cluster
// through a ClusterClient, with a tracking connection to each master, and
// moves a refused key's slot to another master.
func TestNearCacheCluster(t *testing.T) { redistest.CheckClusterNearCache(t, openClusterNear) }

func TestNearCacheClusterReleaseDelay(t *testing.T) {
	redistest.NearCacheDelay(t, openClusterNear, true)
}

// openClusterNear is redistest.Open for this store on a Cluster client.
func openClusterNear(t testing.TB, addr, user string, opts ...redisstore.Option) *redisstore.Store {
	o := &redis.ClusterOptions{Addrs: []string{addr}, ContextTimeoutEnabled: true}
	if user != "" {
		o.Username, o.Password = user, "pw"
	}
	c := redis.NewClusterClient(o)
	s := redisstore.New(c, opts...)
	t.Cleanup(func() { _ = s.Close(); _ = c.Close() })
	<-redisstore.ConfigChecked(s)
	return s
}

// TestNearCacheSentinel checks refusals remembered through a Sentinel
// failover client: after a failover (forced, or the master killed), a
// release on the new master ends them in another process.
func TestNearCacheSentinel(t *testing.T) {
	for _, kill := range []bool{false, true} {
		t.Run(map[bool]string{false: "failover", true: "master-killed"}[kill], func(t *testing.T) {
			ctx := context.Background()
			d := redistest.StartSentinel(t)
			a, _ := sentinelStore(t, d)
			b, _ := sentinelStore(t, d)
			k, tok := storekit.Key("test", "near", storekit.NewToken()), storekit.NewToken()
			mustAcquire(t, a, store.Request{Key: k, Token: tok, TTL: time.Minute})
			redistest.WaitInSync(t, d.Master(), d.Replica())
			redistest.CachedRefusal(t, b, k)
			if kill {
				d.Master().Kill(t)
				d.WaitForMaster(t, d.Replica())
			} else {
				d.Failover(t)
			}
			require.Eventually(t, func() bool {
				out, err := a.Release(ctx, k, tok)
				return err == nil && out == store.OK
			}, failoverLimit, 20*time.Millisecond, "the lock never released on the new master")
			mine := storekit.NewToken()
			require.Eventually(t, func() bool {
				g, err := b.Acquire(ctx, store.Request{Key: k, Token: mine, TTL: time.Minute})
				return err == nil && g.Acquired
			}, failoverLimit, time.Millisecond, "still refused after the release on the new master")
			require.True(t, exists(t, d.Master(), k))
		})
	}
}

// TestNearCacheThroughLock checks the near cache through the public API: a
// flood on an id another process holds is refused by Lock.Admit with the
// holder's time left and costs no command, and the holder's release lets
// the next request through, admitted by Redis.
func TestNearCacheThroughLock(t *testing.T) {
	ctx := context.Background()
	_, srv, c := newStore(t)
	a, b := openNear(t, srv.Addr, ""), openNear(t, srv.Addr, "")
	cfg := throttle.LockConfig{Name: "near", TTL: time.Minute}
	la, err := throttle.NewLock(a, cfg)
	require.NoError(t, err)
	lb, err := throttle.NewLock(b, cfg)
	require.NoError(t, err)
	lease, err := la.Admit(ctx, "user")
	require.NoError(t, err)
	refused := func() {
		t.Helper()
		_, err := lb.Admit(ctx, "user")
		var ce *throttle.ContendedError
		require.ErrorAs(t, err, &ce)
		require.True(t, ce.RetryAfter > 0 && ce.RetryAfter <= time.Minute, "retry after %v", ce.RetryAfter)
	}
	refusedFromCache(t, b, c, refused, func() uint64 { return lb.Stats().NearHits })
	require.NoError(t, lease.Release(ctx))
	require.Eventually(t, func() bool {
		l, err := lb.Admit(ctx, "user")
		return err == nil && l != nil
	}, 10*time.Second, time.Millisecond, "still refused after the release")
}

// TestNearCacheStrictQuota: a Quota's strict rate, spent, is refused by the
// near cache through the limiter (no command, Stats.NearHits), with the
// store's Retry-After, until another process's refund.
func TestNearCacheStrictQuota(t *testing.T) {
	ctx := context.Background()
	_, srv, c := newStore(t)
	a, b := openNear(t, srv.Addr, ""), openNear(t, srv.Addr, "")
	qa, err := throttle.NewQuota(a, throttle.QuotaConfig{Name: "near-strict"})
	require.NoError(t, err)
	qb, err := throttle.NewQuota(b, throttle.QuotaConfig{Name: "near-strict"})
	require.NoError(t, err)
	rate := throttle.Rate{Limit: 3, Window: time.Minute, Strict: true}
	for range 3 {
		d, err := qa.Admit(ctx, "user", rate, 1)
		require.NoError(t, err)
		require.NotNil(t, d)
	}
	refused := func() {
		t.Helper()
		d, err := qb.Admit(ctx, "user", rate, 1)
		require.ErrorIs(t, err, throttle.ErrContended)
		require.True(t, d.RetryAfter > 50*time.Second && d.RetryAfter <= time.Minute, "retry after %v", d.RetryAfter)
		require.Zero(t, d.Remaining)
	}
	refusedFromCache(t, b, c, refused, func() uint64 { return qb.Stats().NearHits })
	_, err = qa.Admit(ctx, "user", rate, -1) // a refund in the other process
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		d, err := qb.Admit(ctx, "user", rate, 1)
		return err == nil && d != nil
	}, 10*time.Second, time.Millisecond, "still refused after the refund")
}

// refusedFromCache refuses through the limiter until b's near cache answers,
// then 100 times more: with no command on c's server, each counted in the
// limiter's Stats.NearHits (nearHits).
func refusedFromCache(t *testing.T, b *redisstore.Store, c *redis.Client, refused func(), nearHits func() uint64) {
	t.Helper()
	require.Eventually(t, func() bool {
		hits := b.NearCacheStats().Hits
		refused()
		return b.NearCacheStats().Hits > hits
	}, 10*time.Second, time.Millisecond, "the near cache never answered")
	before, hits := redistest.DataCalls(t, c), nearHits()
	for range 100 {
		refused()
	}
	require.Equal(t, before, redistest.DataCalls(t, c), "commands of 100 remembered refusals")
	require.Equal(t, hits+100, nearHits(), "Stats.NearHits of 100 remembered refusals")
}
