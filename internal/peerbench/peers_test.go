package peerbench

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/go-chi/httprate"
	"github.com/labstack/echo/v4"
	echomw "github.com/labstack/echo/v4/middleware"
	"github.com/sethvargo/go-limiter/httplimit"
	"github.com/sethvargo/go-limiter/memorystore"
	ulule "github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/middleware/stdlib"
	ulmemory "github.com/ulule/limiter/v3/drivers/store/memory"
	"golang.org/x/time/rate"

	"github.com/go-throttle/throttle/echoadapter"
	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/nethttp"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// The rate every limiter gets: high enough that every request of a run is
// admitted, so that each case measures the admitted path.
const (
	limit  = 1_000_000
	window = time.Minute
)

// userHeader carries the identity; every library keys on it.
const userHeader = "X-User-ID"

// userKey is userHeader in canonical form, looked up once.
var userKey = textproto.CanonicalMIMEHeaderKey(userHeader)

// peerKey is the peers' key function: the first X-User-ID value, read as
// keyfuncs.Header reads it (one map lookup, no allocation), so that the
// key costs every library the same.
func peerKey(r *http.Request) string {
	if v := r.Header[userKey]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func peerKeyErr(r *http.Request) (string, error) { return peerKey(r), nil }

// handler is the guarded handler of every case: 200 with a tiny body.
var (
	okBody  = []byte("ok\n")
	handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(okBody)
	})
)

// discard is the reused ResponseWriter: it keeps the status only. Its
// header map is cleared before every request, in every case alike.
type discard struct {
	h      http.Header
	status int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(s int)           { d.status = s }

// users returns n distinct user ids, built before any timer starts.
func users(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "user-" + strconv.Itoa(i)
	}
	return ids
}

// drive serves requests through h on this goroutine, one reused request
// (POST /submit) whose X-User-ID is ids[i%len(ids)], into one reused
// writer, and fails the benchmark on any status but 200. One untimed pass
// over every user comes first, so that each store starts the timed part
// in its steady state: every user known.
func drive(b *testing.B, h http.Handler, ids []string) {
	r := httptest.NewRequest(http.MethodPost, "/submit", nil)
	val := []string{""}
	r.Header[userKey] = val
	w := &discard{h: make(http.Header)}
	serve := func(i int) {
		val[0] = ids[i%len(ids)]
		clear(w.h)
		w.status = 0
		h.ServeHTTP(w, r)
		if w.status != http.StatusOK {
			b.Fatalf("request %d (user %s): status %d, want 200", i, val[0], w.status)
		}
	}
	for i := range ids {
		serve(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		serve(i)
	}
}

// echoEngine serves h for every method and path behind mw, as the echo
// adapter's own benchmarks do.
func echoEngine(h http.Handler, mw ...echo.MiddlewareFunc) *echo.Echo {
	e := echo.New()
	e.Any("/*", echo.WrapHandler(h), mw...)
	return e
}

// opts are throttle's options in every case: a store failure fails closed
// (503), so that it fails the benchmark rather than pass as a cheaper 200,
// and a generous Timeout, as the project's own benchmarks use.
var opts = throttle.Options{Timeout: time.Second, WhenStoreFails: throttle.FailClosed}

func throttleQuota(tb testing.TB) *guard.Guard {
	q, err := throttle.NewQuota(memstore.New(), throttle.QuotaConfig{Name: "peer", Options: opts})
	if err != nil {
		tb.Fatal(err)
	}
	return guard.Quota(q, throttle.Rate{Limit: limit, Window: window})
}

// dedupeTTL is the shortest TTL a Lock accepts. A user's key must have
// expired when the user comes round again, len(ids) requests later, which
// holds at 65,536 users (over 1 ms unless a request takes under 16 ns) but
// not at 1,024 (about 0.3 ms at 300 ns a request): there the Dedupe case
// is left out.
const dedupeTTL = time.Millisecond

func throttleDedupe(tb testing.TB) *guard.Guard {
	l, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "peer", TTL: dedupeTTL, Options: opts})
	if err != nil {
		tb.Fatal(err)
	}
	return guard.Lock(l)
}

// A case builds its handler per run (so each run starts on an empty store)
// and says whether it can run with n users.
type benchCase struct {
	name  string
	build func(tb testing.TB) http.Handler
	runs  func(n int) bool
}

var cases = []benchCase{
	{name: "bare-nethttp", build: func(testing.TB) http.Handler { return handler }},
	{name: "bare-echo", build: func(testing.TB) http.Handler { return echoEngine(handler) }},
	{
		name: "throttle-dedupe-nethttp",
		build: func(tb testing.TB) http.Handler {
			return nethttp.Middleware(throttleDedupe(tb), keyfuncs.Header(userHeader))(handler)
		},
		runs: func(n int) bool { return n >= 1<<16 },
	},
	{
		name: "throttle-quota-nethttp",
		build: func(tb testing.TB) http.Handler {
			return nethttp.Middleware(throttleQuota(tb), keyfuncs.Header(userHeader))(handler)
		},
	},
	{
		name: "throttle-quota-echo",
		build: func(tb testing.TB) http.Handler {
			return echoEngine(handler, echoadapter.Middleware(throttleQuota(tb), keyfuncs.Header(userHeader)))
		},
	},
	{
		name: "httprate-nethttp",
		build: func(testing.TB) http.Handler {
			return httprate.LimitBy(limit, window, peerKeyErr)(handler)
		},
	},
	{
		name: "go-limiter-nethttp",
		build: func(tb testing.TB) http.Handler {
			st, err := memorystore.New(&memorystore.Config{Tokens: limit, Interval: window})
			if err != nil {
				tb.Fatal(err)
			}
			tb.Cleanup(func() { _ = st.Close(context.Background()) })
			m, err := httplimit.NewMiddleware(st, peerKeyErr)
			if err != nil {
				tb.Fatal(err)
			}
			return m.Handle(handler)
		},
	},
	{
		name: "ulule-nethttp",
		build: func(testing.TB) http.Handler {
			l := ulule.New(ulmemory.NewStore(), ulule.Rate{Period: window, Limit: limit})
			return stdlib.NewMiddleware(l, stdlib.WithKeyGetter(peerKey)).Handler(handler)
		},
	},
	{
		name: "echo-ratelimiter-echo",
		build: func(testing.TB) http.Handler {
			st := echomw.NewRateLimiterMemoryStoreWithConfig(echomw.RateLimiterMemoryStoreConfig{
				Rate: rate.Every(window / limit), Burst: limit})
			return echoEngine(handler, echomw.RateLimiterWithConfig(echomw.RateLimiterConfig{
				Store: st,
				IdentifierExtractor: func(c echo.Context) (string, error) {
					return peerKey(c.Request()), nil
				},
			}))
		},
	},
}

// BenchmarkPeers compares throttle's middleware with its peers' on the
// admitted path: one goroutine (run with -cpu 1), memory stores, n users
// taken in turn, every request admitted with 200. The middleware's cost
// is a row's ns/op less the bare row of the same router and n.
func BenchmarkPeers(b *testing.B) {
	for _, n := range []int{1 << 10, 1 << 16} {
		ids := users(n)
		b.Run("users="+strconv.Itoa(n), func(b *testing.B) {
			for _, c := range cases {
				if c.runs != nil && !c.runs(n) {
					continue
				}
				b.Run(c.name, func(b *testing.B) { drive(b, c.build(b), ids) })
			}
		})
	}
}

// TestPeers serves each case's handler once per user of a small set and
// checks that it admits every request with 200; with -v it logs the
// response fields each middleware writes on an admitted request, which
// is part of what a row's cost buys.
func TestPeers(t *testing.T) {
	ids := users(8)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := c.build(t)
			r := httptest.NewRequest(http.MethodPost, "/submit", nil)
			for _, id := range ids {
				r.Header.Set(userHeader, id)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					t.Fatalf("user %s: status %d, want 200", id, w.Code)
				}
				if id == ids[len(ids)-1] {
					for _, k := range slices.Sorted(maps.Keys(w.Header())) {
						t.Logf("%s: %s", k, w.Header()[k])
					}
				}
			}
		})
	}
}
