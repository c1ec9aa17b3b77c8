package nethttp_test

import (
	"net/http"
	"testing"

	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/nethttp"
	"github.com/go-throttle/throttle/throttle"
)

// BenchmarkMiddleware: one goroutine, memory store; see adaptertest.Bench
// for the cases and their key cardinality. Unlike the suite's adapter, the
// handlers are served directly, as http.Server serves its Handler, without
// an http.ServeMux in front: the mux's routing (and its allocations) would
// be most of the bare case's cost and say nothing about the middleware.
func BenchmarkMiddleware(b *testing.B) { adaptertest.Bench(b, benchAdapter) }

var benchAdapter = adaptertest.Adapter{
	Name: "nethttp",
	Wrap: func(l *throttle.Limiter, key keyfuncs.Func, h http.Handler) http.Handler {
		return nethttp.Middleware(l, key)(h)
	},
	Bare: func(h http.Handler) http.Handler { return h },
	Noop: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) })
	},
}
