package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"
	"github.com/go-throttle/throttle/throttle/storetest"
)

// clusterEnv is the real three-master Redis Cluster the subtests of
// TestCluster share (a cluster takes two seconds to form), with a cluster
// client on it.
type clusterEnv struct {
	*redistest.Cluster
	cc *redis.ClusterClient
}

// TestCluster runs the store on a real Redis Cluster through a go-redis
// ClusterClient: the conformance suite, the slot layout of its keys, release
// notification across nodes, slot migrations under load, and the HTTP
// middleware. The subtests run in turn on one cluster; those that migrate a
// slot pick one nobody else uses.
func TestCluster(t *testing.T) {
	start := time.Now()
	env := &clusterEnv{Cluster: redistest.StartCluster(t, 3)}
	env.cc = env.Client(t)
	t.Logf("cluster ready in %v", time.Since(start).Round(time.Millisecond))

	t.Run("conformance", env.testConformance)
	t.Run("same-slot", env.testSameSlot)
	t.Run("watch", env.testWatch)
	t.Run("migration-steps", env.testMigrationSteps)
	t.Run("migration-under-load", env.testMigrationUnderLoad)
	t.Run("middleware", env.testMiddleware)
}

// startCluster starts a real three-master Redis Cluster (no replicas) and
// returns a cluster client for it, for tests that need a cluster of their
// own.
func startCluster(t *testing.T) *redis.ClusterClient {
	t.Helper()
	return redistest.StartCluster(t, 3).Client(t)
}

// store returns a store on the cluster client, closed at the test's end.
func (env *clusterEnv) store(t testing.TB, opts ...redisstore.Option) *redisstore.Store {
	t.Helper()
	s := redisstore.New(env.cc, opts...)
	t.Cleanup(func() { _ = s.Close() })
	<-redisstore.ConfigChecked(s)
	return s
}

// idsInSlot returns n ids whose keys storekit.Key(prefix, policy, id) hash to
// slot. About one id in 16384 does, and KeySlot needs no round trip.
func idsInSlot(t testing.TB, prefix, policy string, slot, n int) []string {
	t.Helper()
	var ids []string
	for i := 0; len(ids) < n; i++ {
		require.LessOrEqual(t, i, 1000*redistest.ClusterSlots, "no %d ids for slot %d", n, slot)
		id := fmt.Sprint("id-", i)
		if redistest.KeySlot(storekit.Key(prefix, policy, id)) == slot {
			ids = append(ids, id)
		}
	}
	return ids
}

// idOn returns an id whose key storekit.Key(prefix, policy, id) the master m
// owns, and that key.
func (env *clusterEnv) idOn(t testing.TB, m *redistest.Server, prefix, policy string) (id, key string) {
	t.Helper()
	for i := range 1000 {
		id = fmt.Sprint("user-", i)
		key = storekit.Key(prefix, policy, id)
		if env.Owner(t, redistest.KeySlot(key)) == m {
			return id, key
		}
	}
	require.FailNowf(t, "no key", "no key of %s/%s on %s", prefix, policy, m.Addr)
	return "", ""
}

// testConformance runs the shared store suite over the ClusterClient, on
// every path of plain acquisitions (see plainPaths). Its keys fall on every
// node; its fenced and reentrant checks run scripts on a key and its fence
// counter, which a cluster refuses (CROSSSLOT) unless they share a slot.
func (env *clusterEnv) testConformance(t *testing.T) {
	for _, path := range plainPaths {
		t.Run(path, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) store.Store {
				return env.store(t, redisstore.WithPath(path))
			})
		})
	}
}

// testSameSlot checks that a lock key, its fencing counter and its release
// channel hash to one slot for keys of many shapes (asking the servers
// with CLUSTER KEYSLOT), that the keys still spread over the slots, and that
// fenced and reentrant acquisitions, whose scripts touch the lock and the
// counter, work on every master and leave both keys on the key's owner.
func (env *clusterEnv) testSameSlot(t *testing.T) {
	ctx := context.Background()
	slotOf := func(k string) int64 {
		t.Helper()
		n, err := env.cc.ClusterKeySlot(ctx, k).Result()
		require.NoError(t, err, "CLUSTER KEYSLOT %q", k)
		return n
	}
	ids := []string{"", "a:b", "{x}", "}{", "{", "}", "ключ", "\x00\xff", strings.Repeat("long", 50)}
	for i := range 300 {
		ids = append(ids, fmt.Sprint(i))
	}
	slots := map[int64]bool{}
	for _, policy := range []string{"submit", "a:b", "{p}"} {
		for _, id := range ids {
			k := storekit.Key("throttle", policy, id)
			ks := slotOf(k)
			require.Equal(t, ks, slotOf(storekit.FenceKey(k)), "slot of lock %q's fence counter %q", k, storekit.FenceKey(k))
			require.Equal(t, ks, slotOf(k+":released"), "slot of lock %q's channel", k)
			slots[ks] = true
		}
	}
	// A tag that left the id out would put every key of a policy in one
	// slot, on one node.
	require.GreaterOrEqual(t, len(slots), 800, "%d keys fell in %d slots; the hash tag must include the id", 3*len(ids), len(slots))

	s := env.store(t)
	reqs := []struct {
		name string
		req  store.Request
	}{
		{"plain", store.Request{}},
		{"fenced", store.Request{Fence: true}},
		{"reentrant", store.Request{Reentrant: true}},
		{"fenced-reentrant", store.Request{Fence: true, Reentrant: true}},
	}
	for _, m := range env.Masters {
		for _, r := range reqs {
			_, k := env.idOn(t, m, "same-slot", r.name)
			req := r.req
			req.Key, req.Token, req.TTL = k, storekit.NewToken(), time.Minute
			g := mustAcquire(t, s, req)
			if req.Fence {
				require.Positive(t, g.Fence, "%s on %s: no fence: %+v", r.name, m.Addr, g)
			}
			// The lock, and the counter of a fenced one, live on the
			// slot's owner.
			node := env.NodeClient(t, m)
			for kk, want := range map[string]int64{k: 1, storekit.FenceKey(k): int64(boolToInt(req.Fence))} {
				n, err := node.Exists(ctx, kk).Result()
				require.NoError(t, err, "%s on %s: EXISTS %s", r.name, m.Addr, kk)
				require.Equal(t, want, n, "%s on %s: EXISTS %s", r.name, m.Addr, kk)
			}
			gc, err := s.Acquire(ctx, store.Request{Key: k, Token: storekit.NewToken(), TTL: time.Minute, Fence: true})
			require.NoError(t, err, "%s on %s: fenced contender", r.name, m.Addr)
			require.False(t, gc.Acquired, "%s on %s: fenced contender: %+v", r.name, m.Addr, gc)
			if req.Reentrant {
				g2 := mustAcquire(t, s, req)
				require.Equal(t, 2, g2.Holds, "%s on %s: re-entry %+v after %+v; want 2 holds", r.name, m.Addr, g2, g)
				require.Equal(t, g.Fence, g2.Fence, "%s on %s: re-entry %+v after %+v; want the same fence", r.name, m.Addr, g2, g)
				mustOutcome(t, store.StillHeld)(s.Release(ctx, k, req.Token))
			}
			mustOutcome(t, store.OK)(s.Extend(ctx, k, req.Token, time.Minute))
			mustOutcome(t, store.HeldByOther)(s.Release(ctx, k, "other"))
			mustOutcome(t, store.OK)(s.Release(ctx, k, req.Token))
			if req.Fence {
				req.Token = storekit.NewToken()
				g2 := mustAcquire(t, s, req)
				require.Greater(t, g2.Fence, g.Fence, "%s on %s: the next fence", r.name, m.Addr)
				mustOutcome(t, store.OK)(s.Release(ctx, k, req.Token))
			}
		}
	}
}

func boolToInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// testWatch checks release notification through a Lock with
// LockConfig.Wait on the cluster. Three waiters wait for keys on the three
// masters at once; their store has one Pub/Sub connection, on one node, so
// at least two of the releases are published on another node than the one
// the subscription is on (the test checks that some are). The waiters' backoff is a minute, longer than
// their Wait: only a notification can get them the key in time.
func (env *clusterEnv) testWatch(t *testing.T) {
	ctx := context.Background()
	holders := throttle.LockConfig{Name: "watch", Mode: throttle.Exclusive, TTL: time.Minute, Options: throttle.Options{Timeout: time.Second}}
	waiters := holders
	waiters.Wait = 10 * time.Second
	waiters.Backoff = func(int) time.Duration { return time.Minute }
	hl, err := throttle.NewLock(env.store(t), holders)
	require.NoError(t, err)
	wl, err := throttle.NewLock(env.store(t), waiters)
	require.NoError(t, err)

	type waiter struct {
		key    string
		lease  *throttle.Lease
		err    error
		waited time.Duration
	}
	ws := make([]*waiter, len(env.Masters))
	leases := make([]*throttle.Lease, len(env.Masters))
	var wg sync.WaitGroup
	for i, m := range env.Masters {
		id, key := env.idOn(t, m, "throttle", "watch")
		leases[i], err = hl.Acquire(ctx, id)
		require.NoError(t, err, "holder on %s", m.Addr)
		w := &waiter{key: key}
		ws[i] = w
		wg.Go(func() {
			start := time.Now()
			w.lease, w.err = wl.Acquire(ctx, id)
			w.waited = time.Since(start)
		})
	}
	// Wait until every waiter is subscribed, and see where.
	crossNode := 0
	deadline := time.Now().Add(5 * time.Second)
	for i, w := range ws {
		for {
			n, on := env.numSub(t, w.key+":released")
			if n > 0 {
				if on != env.Masters[i] {
					crossNode++
				}
				break
			}
			require.False(t, time.Now().After(deadline), "nobody subscribed to the release channel of %s", w.key)
			time.Sleep(5 * time.Millisecond)
		}
	}
	require.NotEqualValues(t, 0, crossNode, "every waiter is subscribed on its key's node: the test would not show that a release reaches other nodes")
	released := time.Now()
	for _, l := range leases {
		require.NoError(t, l.Release(ctx))
	}
	wg.Wait()
	for i, w := range ws {
		require.NoError(t, w.err, "waiter for the key on %s, after %v", env.Masters[i].Addr, w.waited)
		require.LessOrEqual(t, time.Since(released), 5*time.Second, "waiter for the key on %s: time from the release", env.Masters[i].Addr)
		require.NoError(t, w.lease.Release(ctx))
	}
}

// numSub returns how many subscribers channel has in the cluster and on
// which node (classic Pub/Sub subscriptions are local to the node the
// connection is on).
func (env *clusterEnv) numSub(t testing.TB, channel string) (int64, *redistest.Server) {
	t.Helper()
	var total int64
	var on *redistest.Server
	for _, m := range env.Masters {
		n, err := env.NodeClient(t, m).PubSubNumSub(context.Background(), channel).Result()
		require.NoError(t, err)
		if n[channel] > 0 {
			total += n[channel]
			on = m
		}
	}
	return total, on
}

// isMigrating reports whether err is one of the answers a Redis Cluster
// gives a command on two keys of a slot being migrated when the node holds
// only one of them: -TRYAGAIN, or the -ASK or -MOVED that go-redis last saw
// when it ran out of redirections (MaxRedirects, 3 by default) bouncing
// between the two nodes. Nothing was executed.
func isMigrating(err error) bool {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return false
	}
	msg := rerr.Error()
	return strings.HasPrefix(msg, "TRYAGAIN ") || strings.HasPrefix(msg, "ASK ") || strings.HasPrefix(msg, "MOVED ")
}
