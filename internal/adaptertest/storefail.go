package adaptertest

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/redisstore"
)

// MaxOutage bounds how long any request may take while Redis is down. A
// starved process waits ten store timeouts before it counts the store as
// down (see throttle.Options.Timeout), so the bound leaves room for a
// loaded machine; it is there to catch a wait without end.
const MaxOutage = 5 * time.Second

// Redis is a real redis-server with a client and a store on it.
type Redis struct {
	Server *redistest.Server
	Client *redis.Client
	Store  *redisstore.Store
}

// StartRedis starts a redis-server for the test with a client (with
// ContextTimeoutEnabled, so that store calls end at Options.Timeout) and a
// store, all closed or stopped at cleanup.
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	srv := redistest.Start(t)
	return &Redis{Server: srv, Client: NewClient(t, srv.Addr), Store: NewStore(t, srv.Addr)}
}

// NewClient returns a go-redis client for addr, closed at cleanup.
func NewClient(t testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// NewStore returns a redisstore on a client of its own for addr, as a
// separate service would have; both are closed at cleanup.
func NewStore(t testing.TB, addr string) *redisstore.Store {
	s := redisstore.New(NewClient(t, addr))
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Held reports whether key is held in Redis.
func (r *Redis) Held(t testing.TB, key string) bool {
	t.Helper()
	n, err := r.Client.Exists(context.Background(), key).Result()
	require.NoError(t, err, "EXISTS %s", key)
	return n == 1
}

// RunStoreFailures runs the store-failure suite on a real Redis that is
// stopped and restarted under the adapter's middleware.
func RunStoreFailures(t *testing.T, a Adapter) {
	t.Run("FailOpen", func(t *testing.T) { testFailOpen(t, a) })
	t.Run("FailClosed", func(t *testing.T) { testFailClosed(t, a) })
	t.Run("FailOver", func(t *testing.T) { testFailOver(t, a) })
	t.Run("QuotaFailOpen", func(t *testing.T) { testQuotaStoreFails(t, a, throttle.FailOpen) })
	t.Run("QuotaFailClosed", func(t *testing.T) { testQuotaStoreFails(t, a, throttle.FailClosed) })
	t.Run("ReplayFailClosed", func(t *testing.T) { testReplayStoreFails(t, a) })
}

// timed serves r and fails the test when it took longer than MaxOutage.
func timed(t testing.TB, h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	start := time.Now()
	rec := Serve(h, r)
	require.LessOrEqual(t, time.Since(start), MaxOutage, "a request's time with Redis down")
	return rec
}

// logBuffer collects a limiter's log output.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// storeTimeout is the Options.Timeout of the suite's limiters unless
// their options set one: longer than the default (100 ms), so that on a loaded
// machine a call to a healthy Redis does not run past it and fail a step
// that expects the store to answer. While Redis is down a call runs to
// it (go-redis retries the dial until the deadline), so each request of an
// outage step takes about this long: well within MaxOutage.
const storeTimeout = 500 * time.Millisecond

// redisOptions returns o with a Logger writing to the returned buffer and,
// unless o sets one, a Timeout of storeTimeout, for a limiter on Redis.
func redisOptions(o throttle.Options) (throttle.Options, *logBuffer) {
	logs := &logBuffer{}
	o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	if o.Timeout == 0 {
		o.Timeout = storeTimeout
	}
	return o, logs
}

// newRedisLock returns a Lock named "submit" on r's store under o (see
// redisOptions), and its log.
func newRedisLock(t testing.TB, r *Redis, o throttle.Options) (*throttle.Lock, *logBuffer) {
	t.Helper()
	o, logs := redisOptions(o)
	l, err := throttle.NewLock(r.Store, throttle.LockConfig{Name: "submit", Options: o})
	require.NoError(t, err)
	return l, logs
}

// logged fails the test unless the limiter logged a store error.
func logged(t testing.TB, logs *logBuffer) {
	t.Helper()
	s := logs.String()
	require.Contains(t, s, "level=WARN", "no store error was logged")
	require.Contains(t, s, "store error", "no store error was logged")
}

// guardedByRedis checks that a user is admitted once and then rejected,
// with the key of the limiter named name held in Redis.
func guardedByRedis(t testing.TB, r *Redis, name string, h http.Handler, user string) {
	t.Helper()
	Status(t, Serve(h, Submit(user)), http.StatusCreated)
	Status(t, Serve(h, Submit(user)), http.StatusTooManyRequests)
	require.True(t, r.Held(t, StoredKey(name, user)), "key of %s is not in Redis", user)
}

// eventuallyGuarded waits (up to 15 s) until a fresh user is admitted once,
// rejected next, and has key(name, user) in Redis: Redis guards requests
// again.
func eventuallyGuarded(t testing.TB, r *Redis, key func(name, id string) string, name string, h http.Handler) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for i := 0; ; i++ {
		user := fmt.Sprintf("after-restart-%d", i)
		first, second := Serve(h, Submit(user)).Code, Serve(h, Submit(user)).Code
		if first == http.StatusCreated && second == http.StatusTooManyRequests && r.Held(t, key(name, user)) {
			return
		}
		require.False(t, time.Now().After(deadline), "Redis does not guard requests after restart (last: %d then %d)", first, second)
		time.Sleep(50 * time.Millisecond)
	}
}

func testFailOpen(t *testing.T, a Adapter) {
	r := StartRedis(t)
	l, logs := newRedisLock(t, r, throttle.Options{WhenStoreFails: throttle.FailOpen})
	h := a.Wrap(guard.Lock(l), UserKey(), &counter{})
	guardedByRedis(t, r, "submit", h, "before")

	r.Server.Stop(t)
	before := l.Stats().FailedOpen
	for range 3 {
		rec := timed(t, h, Submit("during"))
		Status(t, rec, http.StatusCreated)
		// Unmetered: the policy holds, the client's quota is unknown.
		CheckPolicy(t, rec.Header(), WindowPolicy("submit", 1, 5))
		NoLimit(t, rec.Header())
	}
	require.Equal(t, uint64(3), l.Stats().FailedOpen-before, "Stats.FailedOpen growth")
	logged(t, logs)

	r.Server.Restart(t)
	eventuallyGuarded(t, r, StoredKey, "submit", h)
}

func testFailClosed(t *testing.T, a Adapter) {
	r := StartRedis(t)
	l, logs := newRedisLock(t, r, throttle.Options{WhenStoreFails: throttle.FailClosed})
	c := &counter{}
	h := a.Wrap(guard.Lock(l), UserKey(), c)
	guardedByRedis(t, r, "submit", h, "before")

	r.Server.Stop(t)
	calls := c.calls.Load()
	port := r.Server.Addr[strings.LastIndexByte(r.Server.Addr, ':')+1:]
	for range 3 {
		rec := timed(t, h, Submit("during"))
		CheckProblem(t, rec, http.StatusServiceUnavailable, "about:blank",
			"during", "redis", "dial", "refused", "127.0.0.1", port)
		RetryAfter(t, rec.Header())
		CheckPolicy(t, rec.Header(), WindowPolicy("submit", 1, 5))
		NoLimit(t, rec.Header())
	}
	require.Equal(t, calls, c.calls.Load(), "handler runs while Redis was down under FailClosed")
	logged(t, logs)

	r.Server.Restart(t)
	eventuallyGuarded(t, r, StoredKey, "submit", h)
}

func testFailOver(t *testing.T, a Adapter) {
	r := StartRedis(t)
	l, logs := newRedisLock(t, r, throttle.Options{WhenStoreFails: throttle.FailOver, Fallback: memstore.New()})
	var calls atomic.Int32
	h := a.Wrap(guard.Lock(l), UserKey(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		OK(w, http.StatusCreated)
	}))
	guardedByRedis(t, r, "submit", h, "before")

	r.Server.Stop(t)
	Status(t, timed(t, h, Submit("during")), http.StatusCreated)
	for range 2 {
		CheckProblem(t, timed(t, h, Submit("during")), http.StatusTooManyRequests, QuotaExceeded)
	}
	require.NotZero(t, l.Stats().Fallback, "Stats.Fallback after serving from the fallback")
	logged(t, logs)

	r.Server.Restart(t)
	eventuallyGuarded(t, r, StoredKey, "submit", h)
}

// testQuotaStoreFails runs a Quota of one request a minute on Redis, stops
// Redis, and checks that requests are let through unmetered (FailOpen) or
// turned away with 503 (FailClosed), with the RateLimit-Policy field alone
// either way; and that Redis decides again once it is back.
func testQuotaStoreFails(t *testing.T, a Adapter, mode throttle.FailMode) {
	r := StartRedis(t)
	o, logs := redisOptions(throttle.Options{WhenStoreFails: mode})
	q, err := throttle.NewQuota(r.Store, throttle.QuotaConfig{Name: "search", Options: o})
	require.NoError(t, err)
	c := &counter{}
	h := a.Wrap(guard.Quota(q, throttle.Rate{Limit: 1, Window: time.Minute}), UserKey(), c)
	policy := WindowPolicy("search", 1, 60)

	rec := Serve(h, Submit("before"))
	Status(t, rec, http.StatusCreated)
	CheckPolicy(t, rec.Header(), policy)
	CheckLimit(t, rec.Header(), "search", 0, 1, 60)
	rec = Serve(h, Submit("before"))
	CheckProblem(t, rec, http.StatusTooManyRequests, QuotaExceeded)
	CheckRejectedLimit(t, rec.Header(), "search", 0)
	require.True(t, r.Held(t, QuotaKey("search", "before")), "the quota is not in Redis")

	r.Server.Stop(t)
	calls, failedOpen := c.calls.Load(), q.Stats().FailedOpen
	for range 3 {
		rec := timed(t, h, Submit("during"))
		if mode == throttle.FailOpen {
			Status(t, rec, http.StatusCreated)
			noRetryAfter(t, rec.Header())
		} else {
			CheckProblem(t, rec, http.StatusServiceUnavailable, "about:blank", "during", "redis", "refused")
			RetryAfter(t, rec.Header())
		}
		CheckPolicy(t, rec.Header(), policy)
		NoLimit(t, rec.Header())
	}
	want := int32(0)
	if mode == throttle.FailOpen {
		want = 3
	}
	assert.Equal(t, want, c.calls.Load()-calls, "handler runs while Redis was down")
	assert.Equal(t, uint64(want), q.Stats().FailedOpen-failedOpen, "Stats.FailedOpen growth")
	logged(t, logs)

	r.Server.Restart(t)
	eventuallyGuarded(t, r, QuotaKey, "search", h)
}

// testReplayStoreFails: a Replay fails closed by default. With Redis
// stopped, an order gets 503 and the handler never runs; a recorded answer
// lost with a Redis that restarts empty is lost, not replayed wrongly: the
// next request with the same key runs afresh, and another user's request
// is never answered with it.
func testReplayStoreFails(t *testing.T, a Adapter) {
	r := StartRedis(t)
	c := ReplayConfig()
	var logs *logBuffer
	c.Options, logs = redisOptions(c.Options)
	rp, err := throttle.NewReplay(r.Store, c)
	require.NoError(t, err)
	require.Equal(t, throttle.FailClosed, rp.Config().WhenStoreFails, "a Replay fails closed by default")
	o := &Orders{}
	h := a.Wrap(guard.Replay(rp), ReplayKey(), o)
	id := orderID(t, Serve(h, Order("alice", "k1", "{}")))
	checkReplayed(t, Serve(h, Order("alice", "k1", "{}")), id)

	r.Server.Stop(t)
	for range 2 {
		rec := timed(t, h, Order("alice", "k2", "{}"))
		CheckProblem(t, rec, http.StatusServiceUnavailable, "about:blank", "alice", "redis", "127.0.0.1")
		RetryAfter(t, rec.Header())
	}
	require.Equal(t, int32(1), o.Runs.Load(), "handler runs: once, none while Redis was down")
	logged(t, logs)

	r.Server.Restart(t) // empty: the record went with the lock
	var rec *httptest.ResponseRecorder
	deadline := time.Now().Add(10 * time.Second)
	for {
		rec = Serve(h, Order("alice", "k1", "{}"))
		if rec.Code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.NotEqual(t, id, orderID(t, rec), "after the restart: the old order, want a new run")
	require.Empty(t, rec.Header().Get(ReplayedHeader), "after the restart: a replay, want a new run")
	require.NotEqual(t, id, orderID(t, Serve(h, Order("bob", "k1", "{}"))), "bob got alice's order")
}
