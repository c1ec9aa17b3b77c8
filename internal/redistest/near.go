package redistest

import (
	"context"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/redisalgo"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// Open returns a store on a new client of the server at addr (another
// process, as far as Redis can tell), logged in as user with password "pw"
// unless user is "", and closed at the test's end.
type Open func(t testing.TB, addr, user string, opts ...redisalgo.Option) *redisalgo.Store

// DataCalls counts the commands stores' requests cost on c's server (INFO,
// CLIENT, CONFIG, CLUSTER and Pub/Sub commands aside).
func DataCalls(t testing.TB, c *redis.Client) int {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	n := 0
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		name = strings.TrimPrefix(name, "cmdstat_")
		if !ok || slices.Contains([]string{"info", "ping", "subscribe", "hello", "select"}, name) ||
			strings.HasPrefix(name, "client") || strings.HasPrefix(name, "config") || strings.HasPrefix(name, "cluster") {
			continue
		}
		calls, err := strconv.Atoi(strings.SplitN(rest, ",", 2)[0])
		require.NoError(t, err, "INFO line %q", line)
		n += calls
	}
	return n
}

// CachedRefusal acquires key with a new token in s until the near cache
// answers (the first refusal starts the tracking connection).
func CachedRefusal(t testing.TB, s *redisalgo.Store, key string) {
	t.Helper()
	req := store.Request{Key: key, Token: storekit.NewToken(), TTL: time.Minute}
	require.Eventually(t, func() bool {
		hits := s.NearCacheStats().Hits
		g, err := s.Acquire(context.Background(), req)
		require.NoError(t, err)
		require.False(t, g.Acquired, "%s acquired while held", key)
		return s.NearCacheStats().Hits > hits
	}, 10*time.Second, time.Millisecond, "the near cache never answered")
}

// spentQuota charges key under r in s until the near cache answers.
func spentQuota(t testing.TB, s *redisalgo.Store, key string, r store.Rate) {
	t.Helper()
	require.Eventually(t, func() bool {
		hits := s.NearCacheStats().Hits
		_, err := s.AllowN(context.Background(), key, r, 1)
		require.NoError(t, err)
		return s.NearCacheStats().Hits > hits
	}, 10*time.Second, time.Millisecond, "the near cache never answered")
}

var perMinute = store.Rate{Limit: 1, Window: time.Minute, Burst: 1}

func nearKey(t testing.TB) string { return storekit.Key("test", "near", storekit.NewToken()) }

func hold(t testing.TB, s *redisalgo.Store, key, token string) {
	t.Helper()
	g, err := s.Acquire(context.Background(), store.Request{Key: key, Token: token, TTL: time.Minute})
	require.NoError(t, err)
	require.True(t, g.Acquired, "%s not acquired", key)
}

// nearTarget is where CheckNearCache's subtests run: a server of their
// own each, or one Cluster that they share (their keys are their own).
type nearTarget struct {
	addr string   // given to Open
	cl   *Cluster // nil: srv
	srv  *Server
}

// node returns the master that holds key.
func (d *nearTarget) node(t testing.TB, key string) *Server {
	if d.cl == nil {
		return d.srv
	}
	return d.cl.Owner(t, KeySlot(key))
}

// client returns a plain client of the master m.
func (d *nearTarget) client(t testing.TB, m *Server) *redis.Client {
	if d.cl == nil {
		return m.Client(t)
	}
	return d.cl.NodeClient(t, m)
}

func (d *nearTarget) masters() []*Server {
	if d.cl == nil {
		return []*Server{d.srv}
	}
	return d.cl.Masters
}

// dataCalls is DataCalls summed over the masters.
func (d *nearTarget) dataCalls(t testing.TB) int {
	n := 0
	for _, m := range d.masters() {
		n += DataCalls(t, d.client(t, m))
	}
	return n
}

// CheckNearCache checks the near cache of refusals of stores made by open,
// on real servers: remembered refusals cost no command and answer as the
// store does; every change of a key (a release, a Reset, a refund, a
// FLUSHALL, a restart, a lost tracking connection) ends its refusals, and
// the next request is admitted by the store; a charge under another rate
// is not refused by an entry; a server that refuses CLIENT TRACKING
// leaves the cache off.
func CheckNearCache(t *testing.T, open Open) { checkNearCache(t, open, nil) }

// CheckClusterNearCache is CheckNearCache on a Redis Cluster of three
// masters, which its subtests share: open is given one master's address,
// and makes a store on a Cluster client.
func CheckClusterNearCache(t *testing.T, open Open) {
	checkNearCache(t, open, StartCluster(t, 3))
}

// checkNearCache runs CheckNearCache's subtests on cl, or each on a server
// of its own when cl is nil.
func checkNearCache(t *testing.T, open Open, cl *Cluster) {
	ctx := context.Background()
	target := func(t *testing.T) *nearTarget {
		if cl != nil {
			return &nearTarget{addr: cl.Addrs[0], cl: cl}
		}
		srv := Start(t)
		return &nearTarget{addr: srv.Addr, srv: srv}
	}
	t.Run("answers", func(t *testing.T) {
		d := target(t)
		a, b, plain := open(t, d.addr, ""), open(t, d.addr, ""), open(t, d.addr, "", redisalgo.WithNearCache(0))
		k, q := nearKey(t), nearKey(t)+":quota"
		hold(t, a, k, storekit.NewToken())
		CachedRefusal(t, b, k)
		spentQuota(t, b, q, perMinute)
		before, hits := d.dataCalls(t), b.NearCacheStats().Hits
		for range 100 {
			g, err := b.Acquire(ctx, store.Request{Key: k, Token: storekit.NewToken(), TTL: time.Minute})
			require.NoError(t, err)
			require.False(t, g.Acquired)
			require.True(t, g.Remaining > 0 && g.Remaining <= time.Minute, "remaining %v", g.Remaining)
			dec, err := b.AllowN(ctx, q, perMinute, 1)
			require.NoError(t, err)
			require.False(t, dec.Allowed)
		}
		require.Equal(t, before, d.dataCalls(t), "commands sent for remembered refusals")
		require.Equal(t, hits+200, b.NearCacheStats().Hits, "hits")
		// The store's answer: as many left, and no later.
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
		require.True(t, cached.Remaining > 0 && cached.Remaining <= g.Remaining+time.Millisecond,
			"cached %v, store %v", cached.Remaining, g.Remaining)
	})

	lock := func(t *testing.T, change func(a *redisalgo.Store, d *nearTarget, k, tok string)) {
		d := target(t)
		a, b := open(t, d.addr, ""), open(t, d.addr, "")
		k, tok := nearKey(t), storekit.NewToken()
		hold(t, a, k, tok)
		CachedRefusal(t, b, k)
		change(a, d, k, tok)
		mine := storekit.NewToken()
		require.Eventually(t, func() bool {
			g, err := b.Acquire(ctx, store.Request{Key: k, Token: mine, TTL: time.Minute})
			return err == nil && g.Acquired
		}, 10*time.Second, time.Millisecond, "still refused after the change")
		holder, err := d.client(t, d.node(t, k)).Get(ctx, k).Result()
		require.NoError(t, err)
		require.Equal(t, mine, holder, "admitted, but Redis holds another token")
	}
	t.Run("release", func(t *testing.T) {
		lock(t, func(a *redisalgo.Store, _ *nearTarget, k, tok string) {
			out, err := a.Release(ctx, k, tok)
			require.NoError(t, err)
			require.Equal(t, store.OK, out)
		})
	})
	t.Run("reset", func(t *testing.T) {
		lock(t, func(a *redisalgo.Store, _ *nearTarget, k, _ string) { require.NoError(t, a.Delete(ctx, k)) })
	})
	t.Run("flushall", func(t *testing.T) {
		lock(t, func(_ *redisalgo.Store, d *nearTarget, _, _ string) {
			for _, m := range d.masters() {
				require.NoError(t, d.client(t, m).FlushAll(ctx).Err())
			}
		})
	})
	t.Run("restart", func(t *testing.T) {
		lock(t, func(_ *redisalgo.Store, d *nearTarget, k, _ string) {
			m := d.node(t, k)
			m.Kill(t)
			m.Restart(t)
			if d.cl != nil {
				d.cl.WaitReady(t)
			}
		})
	})
	t.Run("refund", func(t *testing.T) {
		d := target(t)
		a, b := open(t, d.addr, ""), open(t, d.addr, "")
		q := nearKey(t) + ":quota"
		spentQuota(t, b, q, perMinute)
		_, err := a.AllowN(ctx, q, perMinute, -1)
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			dec, err := b.AllowN(ctx, q, perMinute, 1)
			return err == nil && dec.Allowed
		}, 10*time.Second, time.Millisecond, "still refused after the refund")
	})
	// The tracking connection killed: everything goes (a change may have
	// been missed), and the cache fills again once it is back. A shared
	// Cluster may still list the connections of stores closed before.
	t.Run("client-kill", func(t *testing.T) {
		d := target(t)
		a, b := open(t, d.addr, ""), open(t, d.addr, "")
		k := nearKey(t)
		hold(t, a, k, storekit.NewToken())
		CachedRefusal(t, b, k)
		c := d.client(t, d.node(t, k))
		list, err := c.ClientList(ctx).Result()
		require.NoError(t, err)
		killed := 0
		for _, line := range strings.Split(list, "\n") {
			id, found := strings.CutPrefix(strings.Fields(line + " id=")[0], "id=")
			if found && strings.Contains(line, " flags=") && trackingFlag(line) {
				require.NoError(t, c.Do(ctx, "client", "kill", "id", id).Err())
				killed++
			}
		}
		if d.cl == nil {
			require.Equal(t, 1, killed, "tracking connections in CLIENT LIST:\n%s", list)
		} else {
			require.Positive(t, killed, "tracking connections in CLIENT LIST:\n%s", list)
		}
		require.Eventually(t, func() bool { return b.NearCacheStats().Entries == 0 }, 10*time.Second, time.Millisecond,
			"refusals kept after the tracking connection was lost")
		CachedRefusal(t, b, k)
	})
	// The holder's own token (a retry of its acquisition, a Redlock
	// keeper's next round) is not refused: the store would grant it.
	t.Run("holder", func(t *testing.T) {
		d := target(t)
		a, b := open(t, d.addr, ""), open(t, d.addr, "")
		k, tok := nearKey(t), storekit.NewToken()
		hold(t, a, k, tok)
		CachedRefusal(t, b, k)
		g, err := b.Acquire(ctx, store.Request{Key: k, Token: tok, TTL: time.Minute})
		require.NoError(t, err)
		require.True(t, g.Acquired, "the holder's token refused: %+v", g)
	})
	// A strict rate's refusal: answered with no command as the store
	// answers it, for the cost refused only; a refund elsewhere ends it.
	t.Run("strict", func(t *testing.T) {
		d := target(t)
		a, b, plain := open(t, d.addr, ""), open(t, d.addr, ""), open(t, d.addr, "", redisalgo.WithNearCache(0))
		strict := store.Rate{Limit: 2, Window: time.Minute, Burst: 2, Strict: true}
		q := nearKey(t) + ":quota:strict"
		for range 2 {
			dec, err := a.AllowN(ctx, q, strict, 1)
			require.NoError(t, err)
			require.True(t, dec.Allowed)
		}
		spentQuota(t, b, q, strict)
		before := d.dataCalls(t)
		_, err := b.AllowN(ctx, q, strict, 1)
		require.NoError(t, err)
		require.Equal(t, before, d.dataCalls(t), "a command sent for a remembered strict refusal")
		// The store's answer, then the cache's: as many left, and no later.
		want, err := plain.AllowN(ctx, q, strict, 1)
		require.NoError(t, err)
		got, err := b.AllowN(ctx, q, strict, 1)
		require.NoError(t, err)
		require.False(t, got.Allowed)
		require.Equal(t, want.Remaining, got.Remaining)
		for _, p := range [][2]time.Duration{{got.RetryAfter, want.RetryAfter}, {got.RefillAfter, want.RefillAfter},
			{got.ResetAfter, want.ResetAfter}} {
			require.True(t, p[0] > 0 && p[0] <= p[1] && p[1]-p[0] < 10*time.Second, "cached %+v, store %+v", got, want)
		}
		before = d.dataCalls(t)
		_, err = b.AllowN(ctx, q, strict, 2) // another cost: the store decides
		require.NoError(t, err)
		require.Greater(t, d.dataCalls(t), before, "a charge of another cost answered from the cache")
		_, err = a.AllowN(ctx, q, strict, -1)
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			dec, err := b.AllowN(ctx, q, strict, 1)
			return err == nil && dec.Allowed
		}, 10*time.Second, time.Millisecond, "still refused after the refund")
	})
	t.Run("plan-change", func(t *testing.T) {
		d := target(t)
		s := open(t, d.addr, "")
		q := nearKey(t) + ":quota"
		spentQuota(t, s, q, perMinute)
		dec, err := s.AllowN(ctx, q, store.Rate{Limit: 5, Window: 5 * time.Minute, Burst: 5}, 1)
		require.NoError(t, err)
		require.True(t, dec.Allowed, "refused under the higher plan: %+v", dec)
	})
	// A server that refuses CLIENT TRACKING to the store's user (an ACL,
	// as managed services do): the cache turns off, every request reaches
	// the store.
	t.Run("without-tracking", func(t *testing.T) {
		d := target(t)
		for _, m := range d.masters() {
			require.NoError(t, d.client(t, m).Do(ctx, "acl", "setuser", "notrack", "on", ">pw", "~*", "&*", "+@all",
				"-client|tracking").Err())
		}
		s := open(t, d.addr, "notrack")
		k := nearKey(t)
		hold(t, s, k, storekit.NewToken())
		req := store.Request{Key: k, Token: storekit.NewToken(), TTL: time.Minute}
		require.Eventually(t, func() bool {
			_, err := s.Acquire(ctx, req)
			require.NoError(t, err)
			return !s.NearCacheStats().On
		}, 10*time.Second, time.Millisecond, "the near cache stayed on")
		before := d.dataCalls(t)
		for range 10 {
			g, err := s.Acquire(ctx, req)
			require.NoError(t, err)
			require.False(t, g.Acquired)
		}
		require.GreaterOrEqual(t, d.dataCalls(t), before+10, "commands of 10 refusals")
		require.Zero(t, s.NearCacheStats().Entries)
	})
	// A refused key's slot moves to another master, where the holder then
	// releases it: MIGRATE's deletion on the source ends the refusal, the
	// cache remembers the refusals the new master gives, and the release
	// there ends them too.
	if cl != nil {
		t.Run("migration", func(t *testing.T) {
			d := target(t)
			a, b := open(t, d.addr, ""), open(t, d.addr, "")
			k, tok := nearKey(t), storekit.NewToken()
			hold(t, a, k, tok)
			CachedRefusal(t, b, k)
			from := d.node(t, k)
			to := d.cl.Masters[(slices.Index(d.cl.Masters, from)+1)%len(d.cl.Masters)]
			require.Positive(t, d.cl.MigrateSlot(t, KeySlot(k), from, to), "keys moved")
			require.Eventually(t, func() bool { return b.NearCacheStats().Entries == 0 }, 10*time.Second, time.Millisecond,
				"the refusal kept after its key moved")
			CachedRefusal(t, b, k)
			out, err := a.Release(ctx, k, tok)
			require.NoError(t, err)
			require.Equal(t, store.OK, out)
			released, mine := time.Now(), storekit.NewToken()
			require.Eventually(t, func() bool {
				g, err := b.Acquire(ctx, store.Request{Key: k, Token: mine, TTL: time.Minute})
				return err == nil && g.Acquired
			}, 10*time.Second, time.Millisecond, "still refused after the release on the new master")
			t.Logf("admitted %v after the release on the new master", time.Since(released))
			holder, err := d.client(t, to).Get(ctx, k).Result()
			require.NoError(t, err)
			require.Equal(t, mine, holder, "admitted, but the new master holds another token")
		})
	}
}

// trackingFlag reports whether a CLIENT LIST line is a tracking client's
// (flag t).
func trackingFlag(line string) bool {
	for _, f := range strings.Fields(line) {
		if flags, ok := strings.CutPrefix(f, "flags="); ok {
			return strings.Contains(flags, "t")
		}
	}
	return false
}

// NearCacheDelay measures, over many rounds, how long after a release in
// one store, or a Reset of a spent quota (the quota key deleted), the next
// request in another is admitted: the invalidation's delay. It logs p50
// and p99 of each and asserts nothing on time. With cluster, open is given
// a master's address of a Cluster of three, and the keys fall on every
// master.
func NearCacheDelay(t *testing.T, open Open, cluster bool) {
	if testing.Short() {
		t.Skip("many rounds")
	}
	ctx := context.Background()
	var addr string
	if cluster {
		addr = StartCluster(t, 3).Addrs[0]
	} else {
		addr = Start(t).Addr
	}
	a, b := open(t, addr, ""), open(t, addr, "")
	// until polls b until it admits, as a flood of callers would (not one
	// spinning on a core), and returns how long that took since start.
	until := func(start time.Time, admitted func() bool) time.Duration {
		for !admitted() {
			runtime.Gosched()
		}
		return time.Since(start)
	}
	var released, reset []time.Duration
	for range 500 {
		k, tok := nearKey(t), storekit.NewToken()
		hold(t, a, k, tok)
		CachedRefusal(t, b, k)
		start := time.Now()
		_, err := a.Release(ctx, k, tok)
		require.NoError(t, err)
		released = append(released, until(start, func() bool {
			g, err := b.Acquire(ctx, store.Request{Key: k, Token: storekit.NewToken(), TTL: time.Minute})
			require.NoError(t, err)
			return g.Acquired
		}))

		q := nearKey(t)
		spentQuota(t, b, q, perMinute)
		start = time.Now()
		require.NoError(t, a.Delete(ctx, q))
		reset = append(reset, until(start, func() bool {
			d, err := b.AllowN(ctx, q, perMinute, 1)
			require.NoError(t, err)
			return d.Allowed
		}))
	}
	for _, m := range []struct {
		what string
		ds   []time.Duration
	}{{"release", released}, {"reset", reset}} {
		slices.Sort(m.ds)
		t.Logf("%s to admission in another store, %d rounds: p50 %v, p99 %v, max %v", m.what, len(m.ds),
			m.ds[len(m.ds)/2], m.ds[len(m.ds)*99/100], m.ds[len(m.ds)-1])
	}
}

// NearPair starts a server and returns two redisstore stores on it, each on
// a client of its own (two processes, as far as Redis can tell), closed at
// the test's end: the observers' tests flood one with refusals of a key
// that the other holds (FloodNear).
func NearPair(t testing.TB) (holder, flooded *redisalgo.Store) {
	t.Helper()
	srv := Start(t)
	open := func() *redisalgo.Store {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true})
		s := redisstore.New(c)
		t.Cleanup(func() { _ = s.Close(); _ = c.Close() })
		return s
	}
	return open(), open()
}

// FloodNear refuses id through the Lock l on the store s until s's near
// cache answered n refusals (holder, on another store, took id first);
// then holder releases id, and FloodNear returns once s's cache dropped it
// on Redis's invalidation. The observers' tests read their counts after.
func FloodNear(t testing.TB, s *redisalgo.Store, holder, l *throttle.Lock, id string, n uint64) {
	t.Helper()
	ctx := context.Background()
	lease, err := holder.Admit(ctx, id)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := l.Admit(ctx, id)
		var ce *throttle.ContendedError
		require.ErrorAs(t, err, &ce)
		return l.Stats().NearHits >= n
	}, 10*time.Second, time.Millisecond, "the near cache never answered %d refusals", n)
	before := s.NearCacheStats().Invalidations
	require.NoError(t, lease.Release(ctx))
	require.Eventually(t, func() bool { return s.NearCacheStats().Invalidations > before }, 10*time.Second,
		time.Millisecond, "the release was never reported")
}
