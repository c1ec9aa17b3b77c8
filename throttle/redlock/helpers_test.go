package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/faultproxy"
	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/redlock"
	"github.com/go-throttle/throttle/throttle/rueidisstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// patience bounds every wait for something that happens in the background
// and every hang detector: generous, so that only a call that hangs or a
// thing that never happens fails a test.
const patience = 3 * time.Second

// nodes is a set of independent redis-servers for one test, optionally each
// behind a fault proxy.
type nodes struct {
	srvs    []*redistest.Server
	proxies []*faultproxy.Proxy // nil when not proxied
	// direct are clients straight to the servers, for checks that must
	// not go through a proxy's faults.
	direct []*redis.Client
}

// startNodes starts n redis-servers, behind fault proxies when proxied.
func startNodes(t testing.TB, n int, proxied bool) *nodes {
	t.Helper()
	ns := &nodes{}
	for range n {
		srv := redistest.Start(t)
		ns.srvs = append(ns.srvs, srv)
		ns.direct = append(ns.direct, srv.Client(t))
		if proxied {
			ns.proxies = append(ns.proxies, faultproxy.Start(t, srv.Addr))
		}
	}
	return ns
}

// clients returns a new go-redis client per node (through the proxies if
// any), closed at the test's end, as a separate process would have. tune,
// if given, adjusts each client's options.
func (ns *nodes) clients(t testing.TB, tune ...func(*redis.Options)) []redis.UniversalClient {
	t.Helper()
	cs := make([]redis.UniversalClient, len(ns.srvs))
	for i, srv := range ns.srvs {
		addr := srv.Addr
		if ns.proxies != nil {
			addr = ns.proxies[i].Addr()
		}
		o := &redis.Options{Addr: addr, ContextTimeoutEnabled: true}
		for _, f := range tune {
			f(o)
		}
		c := redis.NewClient(o)
		t.Cleanup(func() { _ = c.Close() })
		cs[i] = c
	}
	return cs
}

// testNodeTimeout is how long the tests' stores wait for a node unless a
// test says otherwise: a second, not the default 100 ms, which the live
// nodes of a loaded machine missed ("0 of 5 nodes answered"). The tests
// check decisions without the faulty nodes, not the speed of the others;
// TestSlowNodeDoesNotSlowAdmission checks that a node timeout bounds a call.
var testNodeTimeout = redlock.WithNodeTimeout(time.Second)

// store returns a Redlock store on new clients to the nodes, closed at the
// test's end (before the clients: cleanups run in reverse).
func (ns *nodes) store(t testing.TB, opts ...redlock.Option) *redlock.Store {
	t.Helper()
	s, err := redlock.New(ns.clients(t), append([]redlock.Option{testNodeTimeout}, opts...)...)
	require.NoError(t, err)
	closeAtEnd(t, s)
	return s
}

// rueidisStore returns a Redlock store over a rueidisstore store per node
// (NewOnStores), on rueidis clients of their own (through the proxies when
// the nodes are proxied), all closed at the test's end.
func (ns *nodes) rueidisStore(t testing.TB, opts ...redlock.Option) *redlock.Store {
	t.Helper()
	stores := make([]store.Store, len(ns.srvs))
	for i, srv := range ns.srvs {
		addr := srv.Addr
		if ns.proxies != nil {
			addr = ns.proxies[i].Addr()
		}
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
		require.NoError(t, err, "rueidis client on %s", addr)
		st := rueidisstore.New(c)
		t.Cleanup(func() { _ = st.Close(); c.Close() })
		stores[i] = st
	}
	s, err := redlock.NewOnStores(stores, append([]redlock.Option{testNodeTimeout}, opts...)...)
	require.NoError(t, err)
	closeAtEnd(t, s)
	return s
}

// holder returns the token that holds key on node i, read straight from
// the server, or "" when the key is missing.
func (ns *nodes) holder(t testing.TB, i int, key string) string {
	t.Helper()
	v, err := ns.direct[i].Get(context.Background(), key).Result()
	if errors.Is(err, redis.Nil) {
		return ""
	}
	require.NoError(t, err, "GET %q on node %d", key, i)
	return v
}

// holding returns how many nodes hold key for token.
func (ns *nodes) holding(t testing.TB, key, token string) int {
	t.Helper()
	n := 0
	for i, srv := range ns.srvs {
		if srv.Running() && ns.holder(t, i, key) == token {
			n++
		}
	}
	return n
}

// eventuallyHeldEverywhere waits until every node holds key for token (a
// grant comes with the quorum; the last node may still be on its way).
func (ns *nodes) eventuallyHeldEverywhere(t testing.TB, key, token string) {
	t.Helper()
	eventually(t, func() bool { return ns.holding(t, key, token) == len(ns.srvs) }, "not every node holds %q", key)
}

// hold sets key to token with ttl on the given nodes directly, as another
// holder's lock (or a contender's partial one) would be.
func (ns *nodes) hold(t testing.TB, key, token string, ttl time.Duration, idx ...int) {
	t.Helper()
	for _, i := range idx {
		require.NoError(t, ns.direct[i].Set(context.Background(), key, token, ttl).Err(), "SET on node %d", i)
	}
}

// eventuallyFree waits until no node holds key for token, and fails the
// test after patience naming the nodes that still do.
func (ns *nodes) eventuallyFree(t testing.TB, key, token string) {
	t.Helper()
	eventually(t, func() bool { return ns.holding(t, key, token) == 0 }, "the token still holds %q on some node", key)
}

// eventually polls cond, on the test's goroutine, until it holds, and fails
// the test with msg after patience.
func eventually(t testing.TB, cond func() bool, msg string, args ...any) {
	t.Helper()
	for deadline := time.Now().Add(patience); !cond(); time.Sleep(5 * time.Millisecond) {
		require.False(t, time.Now().After(deadline), append([]any{msg}, args...)...)
	}
}

// within runs f and fails the test when it has not returned after limit: a
// hang detector, never a timing assertion. f runs on the test's goroutine
// (so it may call t.Fatal); every call the tests make is bounded by some
// timeout, so a call that hangs past limit still returns, later, and the
// test then fails with this message.
func within(t testing.TB, limit time.Duration, what string, f func()) {
	t.Helper()
	fired := make(chan struct{})
	timer := time.AfterFunc(limit, func() {
		defer close(fired)
		assert.Failf(t, "hang", "%s did not return within %v", what, limit)
	})
	defer func() {
		if !timer.Stop() {
			<-fired
		}
	}()
	f()
}

// newKey returns a fresh key in the shape storekit.Key builds.
func newKey(t testing.TB) string {
	return storekit.Key("redlock-test", t.Name(), storekit.NewToken())
}

func req(key string, ttl time.Duration) store.Request {
	return store.Request{Key: key, Token: storekit.NewToken(), TTL: ttl}
}

func mustAcquire(t testing.TB, s store.Store, r store.Request) store.Grant {
	t.Helper()
	g, err := s.Acquire(context.Background(), r)
	require.NoError(t, err, "Acquire(%q)", r.Key)
	require.True(t, g.Acquired, "Acquire(%q) refused: %+v", r.Key, g)
	return g
}

func mustRefuse(t testing.TB, s store.Store, r store.Request) store.Grant {
	t.Helper()
	g, err := s.Acquire(context.Background(), r)
	require.NoError(t, err, "Acquire(%q)", r.Key)
	require.False(t, g.Acquired, "Acquire(%q) granted while the key is held: %+v", r.Key, g)
	return g
}

func mustOutcome(t testing.TB, what string, want store.Outcome) func(store.Outcome, error) {
	t.Helper()
	return func(got store.Outcome, err error) {
		t.Helper()
		require.NoError(t, err, what)
		require.Equal(t, want, got, what)
	}
}

// closeAtEnd closes s at the test's end and fails the test if Close does.
func closeAtEnd(t testing.TB, s *redlock.Store) {
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
}
