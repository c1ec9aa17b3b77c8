package redisstore_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// dataCalls counts the commands a store's requests cost on c's server
// (INFO, CLIENT and Pub/Sub commands aside).
func dataCalls(t testing.TB, c *redis.Client) int {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	n := 0
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		name = strings.TrimPrefix(name, "cmdstat_")
		if !ok || slices.Contains([]string{"info", "ping", "subscribe", "hello", "select"}, name) ||
			strings.HasPrefix(name, "client") || strings.HasPrefix(name, "config") {
			continue
		}
		var calls int
		for _, ch := range strings.SplitN(rest, ",", 2)[0] {
			calls = calls*10 + int(ch-'0')
		}
		n += calls
	}
	return n
}

// secondStore returns another store on srv, on a client of its own: another
// process, as far as Redis can tell.
func secondStore(t testing.TB, srv *redistest.Server, opts ...redisstore.Option) *redisstore.Store {
	t.Helper()
	s := redisstore.New(srv.Client(t), opts...)
	t.Cleanup(func() { _ = s.Close() })
	<-redisstore.ConfigChecked(s)
	return s
}

// cachedRefusal acquires key with a new token in s until the near cache
// answers (the first refusal starts the tracking connection).
func cachedRefusal(t testing.TB, s *redisstore.Store, key string) {
	t.Helper()
	req := store.Request{Key: key, Token: storekit.NewToken(), TTL: time.Minute}
	require.Eventually(t, func() bool {
		hits := s.NearCacheStats().Hits
		g, err := s.Acquire(context.Background(), req)
		require.NoError(t, err)
		require.False(t, g.Acquired, "%s acquired while held", key)
		return s.NearCacheStats().Hits > hits
	}, 10*time.Second, time.Millisecond, "the near cache never kept the refusal")
}

// spentQuota charges key under r in s until the near cache answers.
func spentQuota(t testing.TB, s *redisstore.Store, key string, r store.Rate) {
	t.Helper()
	require.Eventually(t, func() bool {
		hits := s.NearCacheStats().Hits
		_, err := s.AllowN(context.Background(), key, r, 1)
		require.NoError(t, err)
		return s.NearCacheStats().Hits > hits
	}, 10*time.Second, time.Millisecond, "the near cache never kept the refusal")
}

var perMinute = store.Rate{Limit: 1, Window: time.Minute, Burst: 1}

// TestNearCacheAnswers checks that refusals of a held key and of a spent
// quota, once remembered, cost no command and answer as the store does.
func TestNearCacheAnswers(t *testing.T) {
	ctx := context.Background()
	a, srv, c := newStore(t)
	b, plain := secondStore(t, srv), secondStore(t, srv, redisstore.WithNearCache(0))
	k := key(t)
	mustAcquire(t, a, store.Request{Key: k, Token: storekit.NewToken(), TTL: time.Minute})
	cachedRefusal(t, b, k)
	q := key(t) + ":quota"
	spentQuota(t, b, q, perMinute)

	before, hits := dataCalls(t, c), b.NearCacheStats().Hits
	for range 100 {
		g, err := b.Acquire(ctx, store.Request{Key: k, Token: storekit.NewToken(), TTL: time.Minute})
		require.NoError(t, err)
		require.False(t, g.Acquired)
		require.True(t, g.Remaining > 0 && g.Remaining <= time.Minute, "remaining %v", g.Remaining)
		d, err := b.AllowN(ctx, q, perMinute, 1)
		require.NoError(t, err)
		require.False(t, d.Allowed)
	}
	require.Equal(t, before, dataCalls(t, c), "commands sent for remembered refusals")
	require.Equal(t, hits+200, b.NearCacheStats().Hits, "hits")

	// The same answer as the store's: no later than it, and as many left.
	want, err := plain.AllowN(ctx, q, perMinute, 1)
	require.NoError(t, err)
	got, err := b.AllowN(ctx, q, perMinute, 1)
	require.NoError(t, err)
	require.Equal(t, want.Remaining, got.Remaining)
	require.True(t, got.RetryAfter > 0 && got.RetryAfter <= want.RetryAfter && got.ResetAfter <= want.ResetAfter,
		"cached %+v, store %+v", got, want)
	g, err := plain.Acquire(ctx, store.Request{Key: k, Token: storekit.NewToken(), TTL: time.Minute})
	require.NoError(t, err)
	cached, err := b.Acquire(ctx, store.Request{Key: k, Token: storekit.NewToken(), TTL: time.Minute})
	require.NoError(t, err)
	require.True(t, cached.Remaining > 0 && cached.Remaining <= g.Remaining+time.Millisecond, "cached %v, store %v",
		cached.Remaining, g.Remaining)
}

// TestNearCacheInvalidated checks that every change of a remembered key,
// made by another process (store) or by Redis, ends its refusals in this
// one: the next request reaches the store and is admitted by it.
func TestNearCacheInvalidated(t *testing.T) {
	ctx := context.Background()
	lock := func(t *testing.T, change func(a *redisstore.Store, srv *redistest.Server, c *redis.Client, k, tok string)) {
		a, srv, c := newStore(t)
		b := secondStore(t, srv)
		k, tok := key(t), storekit.NewToken()
		mustAcquire(t, a, store.Request{Key: k, Token: tok, TTL: time.Minute})
		cachedRefusal(t, b, k)
		change(a, srv, c, k, tok)
		mine := storekit.NewToken()
		require.Eventually(t, func() bool {
			g, err := b.Acquire(ctx, store.Request{Key: k, Token: mine, TTL: time.Minute})
			return err == nil && g.Acquired
		}, 10*time.Second, time.Millisecond, "still refused after the change")
		holder, err := c.Get(ctx, k).Result()
		require.NoError(t, err)
		require.Equal(t, mine, holder, "admitted, but Redis holds another token")
	}
	t.Run("release", func(t *testing.T) {
		lock(t, func(a *redisstore.Store, _ *redistest.Server, _ *redis.Client, k, tok string) {
			mustOutcome(t, store.OK)(a.Release(ctx, k, tok))
		})
	})
	t.Run("reset", func(t *testing.T) {
		lock(t, func(a *redisstore.Store, _ *redistest.Server, _ *redis.Client, k, _ string) {
			require.NoError(t, a.Delete(ctx, k))
		})
	})
	t.Run("flushall", func(t *testing.T) {
		lock(t, func(_ *redisstore.Store, _ *redistest.Server, c *redis.Client, _, _ string) {
			require.NoError(t, c.FlushAll(ctx).Err())
		})
	})
	t.Run("restart", func(t *testing.T) {
		lock(t, func(_ *redisstore.Store, srv *redistest.Server, _ *redis.Client, _, _ string) {
			srv.Kill(t)
			srv.Restart(t)
		})
	})
	t.Run("refund", func(t *testing.T) {
		a, srv, _ := newStore(t)
		b := secondStore(t, srv)
		q := key(t) + ":quota"
		spentQuota(t, b, q, perMinute)
		_, err := a.AllowN(ctx, q, perMinute, -1)
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			d, err := b.AllowN(ctx, q, perMinute, 1)
			return err == nil && d.Allowed
		}, 10*time.Second, time.Millisecond, "still refused after the refund")
	})
	// The tracking connection killed: everything goes (a change may have
	// been missed), and the cache fills again once it is back.
	t.Run("client-kill", func(t *testing.T) {
		a, srv, c := newStore(t)
		b := secondStore(t, srv)
		k := key(t)
		mustAcquire(t, a, store.Request{Key: k, Token: storekit.NewToken(), TTL: time.Minute})
		cachedRefusal(t, b, k)
		require.NoError(t, c.Do(ctx, "client", "kill", "type", "pubsub").Err())
		require.Eventually(t, func() bool { return b.NearCacheStats().Entries == 0 }, 10*time.Second, time.Millisecond,
			"refusals kept after the tracking connection was lost")
		cachedRefusal(t, b, k)
	})
}

// TestNearCachePlanChange checks that a refusal under one rate does not
// answer a charge under another: a user moved to a higher plan is admitted.
func TestNearCachePlanChange(t *testing.T) {
	s, _, _ := newStore(t)
	q := key(t) + ":quota"
	spentQuota(t, s, q, perMinute)
	d, err := s.AllowN(context.Background(), q, store.Rate{Limit: 5, Window: 5 * time.Minute, Burst: 5}, 1)
	require.NoError(t, err)
	require.True(t, d.Allowed, "refused under the higher plan: %+v", d)
}

// TestNearCacheWithoutTracking checks a server that refuses CLIENT
// TRACKING to the store's user (an ACL, as managed services do): the cache
// turns off and every request reaches the store.
func TestNearCacheWithoutTracking(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	gc := srv.Client(t)
	require.NoError(t, gc.Do(ctx, "acl", "setuser", "notrack", "on", ">pw", "~*", "&*", "+@all", "-client|tracking").Err())
	limited := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "notrack", Password: "pw", ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = limited.Close() })
	s := redisstore.New(limited)
	t.Cleanup(func() { _ = s.Close() })
	k := key(t)
	mustAcquire(t, s, store.Request{Key: k, Token: storekit.NewToken(), TTL: time.Minute})
	req := store.Request{Key: k, Token: storekit.NewToken(), TTL: time.Minute}
	require.Eventually(t, func() bool {
		_, err := s.Acquire(ctx, req)
		require.NoError(t, err)
		return !s.NearCacheStats().On
	}, 10*time.Second, time.Millisecond, "the near cache stayed on")
	before := dataCalls(t, gc)
	for range 10 {
		g, err := s.Acquire(ctx, req)
		require.NoError(t, err)
		require.False(t, g.Acquired)
	}
	require.GreaterOrEqual(t, dataCalls(t, gc), before+10, "commands of 10 refusals")
	require.Zero(t, s.NearCacheStats().Entries)
}

// TestNearCacheReleaseDelay measures, over many rounds, how long after a
// release in one process the next request in another is admitted (the
// invalidation's delay); it logs p50 and p99 and asserts nothing on time.
func TestNearCacheReleaseDelay(t *testing.T) {
	if testing.Short() {
		t.Skip("many rounds")
	}
	ctx := context.Background()
	a, srv, _ := newStore(t)
	b := secondStore(t, srv)
	var delays []time.Duration
	for range 200 {
		k, tok := key(t), storekit.NewToken()
		mustAcquire(t, a, store.Request{Key: k, Token: tok, TTL: time.Minute})
		cachedRefusal(t, b, k)
		start := time.Now()
		mustOutcome(t, store.OK)(a.Release(ctx, k, tok))
		for {
			g, err := b.Acquire(ctx, store.Request{Key: k, Token: storekit.NewToken(), TTL: time.Minute})
			require.NoError(t, err)
			if g.Acquired {
				break
			}
		}
		delays = append(delays, time.Since(start))
	}
	slices.Sort(delays)
	t.Logf("release to admission in another store, %d rounds: p50 %v, p99 %v, max %v", len(delays),
		delays[len(delays)/2], delays[len(delays)*99/100], delays[len(delays)-1])
}
