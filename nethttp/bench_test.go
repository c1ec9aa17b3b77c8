package nethttp_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/nethttp"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
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
