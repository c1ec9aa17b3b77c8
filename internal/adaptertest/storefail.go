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

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/redisstore"
)

// MaxOutage bounds how long any request may take while Redis is down: the
// store timeout is storeTimeout, so this is generous on a loaded machine.
const MaxOutage = 2 * time.Second

// Redis is a real redis-server with a client and a store on it.
type Redis struct {
	Server *redistest.Server
	Client *redis.Client
	Store  *redisstore.Store
}

// StartRedis starts a redis-server for the test with a client (with
// ContextTimeoutEnabled, so that store calls end at Policy.Timeout) and a
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
	if err != nil {
		t.Fatalf("EXISTS %s: %v", key, err)
	}
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
	if d := time.Since(start); d > MaxOutage {
		t.Fatalf("request took %v with Redis down, more than %v", d, MaxOutage)
	}
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

// storeTimeout is the Policy.Timeout of the suite's limiters unless the
// policy sets one: longer than the default (100 ms), so that on a loaded
// machine a call to a healthy Redis does not run past it and fail a step
// that expects the store to answer. While Redis is down a call runs to
// it (go-redis retries the dial until the deadline), so each request of an
// outage step takes about this long: well within MaxOutage.
const storeTimeout = 500 * time.Millisecond

// newRedisLimiter returns a limiter on r's store whose log goes to the
// returned buffer.
func newRedisLimiter(t testing.TB, r *Redis, p throttle.Policy) (*throttle.Limiter, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	p.Logger = slog.New(slog.NewTextHandler(logs, nil))
	if p.Timeout == 0 {
		p.Timeout = storeTimeout
	}
	l, err := throttle.New(r.Store, p)
	if err != nil {
		t.Fatal(err)
	}
	return l, logs
}

// logged fails the test unless the limiter logged a store error.
func logged(t testing.TB, logs *logBuffer) {
	t.Helper()
	if s := logs.String(); !strings.Contains(s, "level=WARN") || !strings.Contains(s, "store error") {
		t.Fatalf("no store error was logged; log: %q", s)
	}
}

// guardedByRedis checks that a user is admitted once and then rejected,
// with the key held in Redis.
func guardedByRedis(t testing.TB, r *Redis, l *throttle.Limiter, h http.Handler, user string) {
	t.Helper()
	Status(t, Serve(h, Submit(user)), http.StatusCreated)
	Status(t, Serve(h, Submit(user)), http.StatusTooManyRequests)
	if !r.Held(t, StoredKey(l, user)) {
		t.Fatalf("key of %s is not in Redis", user)
	}
}

// eventuallyGuarded waits (up to 15 s) until a fresh user is admitted once,
// rejected next, and has the key in Redis: Redis guards requests again.
func eventuallyGuarded(t testing.TB, r *Redis, l *throttle.Limiter, h http.Handler) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for i := 0; ; i++ {
		user := fmt.Sprintf("after-restart-%d", i)
		first, second := Serve(h, Submit(user)).Code, Serve(h, Submit(user)).Code
		if first == http.StatusCreated && second == http.StatusTooManyRequests && r.Held(t, StoredKey(l, user)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Redis does not guard requests after restart (last: %d then %d)", first, second)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func testFailOpen(t *testing.T, a Adapter) {
	r := StartRedis(t)
	l, logs := newRedisLimiter(t, r, throttle.Policy{Name: "submit", WhenStoreFails: throttle.FailOpen})
	h := a.Wrap(l, UserKey(), &counter{})
	guardedByRedis(t, r, l, h, "before")

	r.Server.Stop(t)
	before := l.Stats().FailedOpen
	for i := 0; i < 3; i++ {
		rec := timed(t, h, Submit("during"))
		Status(t, rec, http.StatusCreated)
		// Unmetered: the policy holds, the client's quota is unknown.
		CheckPolicy(t, rec.Header(), WindowPolicy("submit", 1, 5))
		NoLimit(t, rec.Header())
	}
	if n := l.Stats().FailedOpen - before; n != 3 {
		t.Fatalf("Stats.FailedOpen grew by %d, want 3", n)
	}
	logged(t, logs)

	r.Server.Restart(t)
	eventuallyGuarded(t, r, l, h)
}

func testFailClosed(t *testing.T, a Adapter) {
	r := StartRedis(t)
	l, logs := newRedisLimiter(t, r, throttle.Policy{Name: "submit", WhenStoreFails: throttle.FailClosed})
	c := &counter{}
	h := a.Wrap(l, UserKey(), c)
	guardedByRedis(t, r, l, h, "before")

	r.Server.Stop(t)
	calls := c.calls.Load()
	port := r.Server.Addr[strings.LastIndexByte(r.Server.Addr, ':')+1:]
	for i := 0; i < 3; i++ {
		rec := timed(t, h, Submit("during"))
		CheckProblem(t, rec, http.StatusServiceUnavailable, "about:blank",
			"during", "redis", "dial", "refused", "127.0.0.1", port)
		RetryAfter(t, rec.Header())
		CheckPolicy(t, rec.Header(), WindowPolicy("submit", 1, 5))
		NoLimit(t, rec.Header())
	}
	if n := c.calls.Load() - calls; n != 0 {
		t.Fatalf("handler ran %d times while Redis was down under FailClosed", n)
	}
	logged(t, logs)

	r.Server.Restart(t)
	eventuallyGuarded(t, r, l, h)
}

func testFailOver(t *testing.T, a Adapter) {
	r := StartRedis(t)
	l, logs := newRedisLimiter(t, r, throttle.Policy{Name: "submit", WhenStoreFails: throttle.FailOver,
		Fallback: memstore.New()})
	var calls atomic.Int32
	h := a.Wrap(l, UserKey(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		OK(w, http.StatusCreated)
	}))
	guardedByRedis(t, r, l, h, "before")

	r.Server.Stop(t)
	Status(t, timed(t, h, Submit("during")), http.StatusCreated)
	for i := 0; i < 2; i++ {
		CheckProblem(t, timed(t, h, Submit("during")), http.StatusTooManyRequests, QuotaExceeded)
	}
	if n := l.Stats().Fallback; n == 0 {
		t.Fatal("Stats.Fallback is 0 after serving from the fallback")
	}
	logged(t, logs)

	r.Server.Restart(t)
	eventuallyGuarded(t, r, l, h)
}

// testQuotaStoreFails runs a Quota of one request a minute on Redis, stops
// Redis, and checks that requests are let through unmetered (FailOpen) or
// turned away with 503 (FailClosed), with the RateLimit-Policy field alone
// either way; and that Redis decides again once it is back.
func testQuotaStoreFails(t *testing.T, a Adapter, mode throttle.FailMode) {
	r := StartRedis(t)
	l, logs := newRedisLimiter(t, r, throttle.Policy{Name: "search", Mode: throttle.Quota, Limit: 1,
		Window: time.Minute, WhenStoreFails: mode})
	c := &counter{}
	h := a.Wrap(l, UserKey(), c)
	policy := WindowPolicy("search", 1, 60)

	rec := Serve(h, Submit("before"))
	Status(t, rec, http.StatusCreated)
	CheckPolicy(t, rec.Header(), policy)
	CheckLimit(t, rec.Header(), "search", 0, 1, 60)
	rec = Serve(h, Submit("before"))
	CheckProblem(t, rec, http.StatusTooManyRequests, QuotaExceeded)
	CheckRejectedLimit(t, rec.Header(), "search", 0)
	if !r.Held(t, StoredKey(l, "before")) {
		t.Fatal("the quota is not in Redis")
	}

	r.Server.Stop(t)
	calls, failedOpen := c.calls.Load(), l.Stats().FailedOpen
	for i := 0; i < 3; i++ {
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
	if n := c.calls.Load() - calls; n != want {
		t.Fatalf("handler ran %d times while Redis was down, want %d", n, want)
	}
	if n := l.Stats().FailedOpen - failedOpen; n != uint64(want) {
		t.Fatalf("Stats.FailedOpen grew by %d, want %d", n, want)
	}
	logged(t, logs)

	r.Server.Restart(t)
	eventuallyGuarded(t, r, l, h)
}

// testReplayStoreFails: a Replay policy fails closed by default. With Redis
// stopped, an order gets 503 and the handler never runs; a recorded answer
// lost with a Redis that restarts empty is lost, not replayed wrongly: the
// next request with the same key runs afresh, and another user's request
// is never answered with it.
func testReplayStoreFails(t *testing.T, a Adapter) {
	r := StartRedis(t)
	p := ReplayPolicy()
	l, logs := newRedisLimiter(t, r, p)
	if l.Policy().WhenStoreFails != throttle.FailClosed {
		t.Fatalf("Replay fails %v by default, want closed", l.Policy().WhenStoreFails)
	}
	o := &Orders{}
	h := a.Wrap(l, ReplayKey(), o)
	id := orderID(t, Serve(h, Order("alice", "k1", "{}")))
	checkReplayed(t, Serve(h, Order("alice", "k1", "{}")), id)

	r.Server.Stop(t)
	for range 2 {
		rec := timed(t, h, Order("alice", "k2", "{}"))
		CheckProblem(t, rec, http.StatusServiceUnavailable, "about:blank", "alice", "redis", "127.0.0.1")
		RetryAfter(t, rec.Header())
	}
	if n := o.Runs.Load(); n != 1 {
		t.Fatalf("handler ran %d times, want once (none while Redis was down)", n)
	}
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
	if got := orderID(t, rec); got == id || rec.Header().Get(ReplayedHeader) != "" {
		t.Fatalf("after the restart: order %d replayed %q; want a new run", got, rec.Header().Get(ReplayedHeader))
	}
	if got := orderID(t, Serve(h, Order("bob", "k1", "{}"))); got == id {
		t.Fatal("bob got alice's order")
	}
}
