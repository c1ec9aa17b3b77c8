package nethttp_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/nethttp"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/overload"
	"github.com/go-throttle/throttle/throttle/store"
)

// BenchmarkMiddleware: one goroutine, memory store; see adaptertest.Bench
// for the cases and their key cardinality. Unlike the suite's adapter, the
// handlers are served directly, as http.Server serves its Handler, without
// an http.ServeMux in front: the mux's routing (and its allocations) would
// be most of the bare case's cost and say nothing about the middleware.
func BenchmarkMiddleware(b *testing.B) { adaptertest.Bench(b, benchAdapter) }

var benchAdapter = adaptertest.Adapter{
	Name: "nethttp",
	Wrap: func(g *guard.Guard, key keyfuncs.Func, h http.Handler) http.Handler {
		return nethttp.Middleware(g, key)(h)
	},
	Bare: func(h http.Handler) http.Handler { return h },
	Noop: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) })
	},
}

// BenchmarkStoreFloor is the floor under BenchmarkMiddleware's
// admitted-distinct-ips case: a handler that does only what any
// memstore-backed middleware must (the client IP, the stored key, one
// memstore.Acquire with a fixed token, the two RateLimit fields) on the
// same steady state of 2^18 clients under a 20 ms window, one goroutine.
// The middleware's figure over this one is what the Lock, the lease and
// the guard add; this one is mostly the store's map under churn.
func BenchmarkStoreFloor(b *testing.B) {
	st := memstore.New()
	key := keyfuncs.RemoteIP()
	tok := storekit.NewToken()
	policy, limit := []string{`"submit";q=1;w=1`}, []string{`"submit";r=0;t=1`}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := key(r)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		req := store.Request{Key: storekit.Key("throttle", "submit", id), Token: tok, TTL: 20 * time.Millisecond}
		if g, err := st.Acquire(r.Context(), req); err != nil || !g.Acquired {
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Header()["Ratelimit-Policy"], w.Header()["Ratelimit"] = policy, limit
		w.WriteHeader(http.StatusCreated)
	})
	adaptertest.DriveWith(b, h, http.StatusCreated, adaptertest.ByAddr(adaptertest.DistinctAddrs(1<<18)))
}

// BenchmarkOverload measures a request through guard.Overload and the
// middleware against the bare handler (201 with a small body, at once), at
// the concurrency its name states: one goroutine, or 8 per CPU (run with
// -cpu 1,2 for 8 and 16 at once). The limiter has the zero Config, as the
// examples' GET /api/report; with 16 requests at once, more than its
// starting limit of 8, some may wait for a permit or, under the CPU
// contention, be shed with 503 (reported as 503s/op). shed-first-503 is
// the refusal's path: a ShedFirst request with the one permit held,
// answered 503 with Retry-After and a problem body at once.
func BenchmarkOverload(b *testing.B) {
	addr := adaptertest.ByAddr([]string{adaptertest.ClientAddr + ":1234"})
	guarded := func(b *testing.B, c overload.Config, prio func(*http.Request) overload.Priority) http.Handler {
		l, err := overload.New(c)
		if err != nil {
			b.Fatal(err)
		}
		return nethttp.Middleware(guard.Overload(l, prio), keyfuncs.Static("all"))(benchCreated)
	}
	b.Run("bare/1-goroutine", func(b *testing.B) {
		adaptertest.DriveWith(b, benchCreated, http.StatusCreated, addr)
	})
	b.Run("overload/1-goroutine", func(b *testing.B) {
		adaptertest.DriveWith(b, guarded(b, overload.Config{Name: "report"}, nil), http.StatusCreated, addr)
	})
	b.Run("bare/8-goroutines-per-cpu", func(b *testing.B) {
		adaptertest.DriveParallel(b, benchCreated, 8, http.StatusCreated, 0)
	})
	b.Run("overload/8-goroutines-per-cpu", func(b *testing.B) {
		h := guarded(b, overload.Config{Name: "report"}, nil)
		adaptertest.DriveParallel(b, h, 8, http.StatusCreated, http.StatusServiceUnavailable)
	})
	b.Run("shed-first-503/1-goroutine", func(b *testing.B) {
		l, err := overload.New(overload.Config{Name: "report", MinLimit: 1, MaxLimit: 1})
		if err != nil {
			b.Fatal(err)
		}
		held, err := l.Acquire(context.Background(), overload.Normal)
		if err != nil {
			b.Fatal(err)
		}
		defer held.End()
		shedFirst := func(*http.Request) overload.Priority { return overload.ShedFirst }
		h := nethttp.Middleware(guard.Overload(l, shedFirst), keyfuncs.Static("all"))(benchCreated)
		adaptertest.DriveWith(b, h, http.StatusServiceUnavailable, addr)
	})
}

// benchCreated answers 201 with a small body, as the adapter suite's
// guarded handler does.
var benchCreated = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(createdBody)
})

var createdBody = []byte(`{"ok":true}` + "\n")
