package guard_test

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/flow"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// The example's adapter.

// miniAdapter puts the example's adapter through the behaviour suite of
// nethttp, ginadapter and echoadapter: a thin adapter on guard answers
// exactly as they do.
var miniAdapter = adaptertest.Adapter{
	Name: "mini",
	Wrap: func(g *guard.Guard, key keyfuncs.Func, h http.Handler) http.Handler {
		return miniServer(throttleMini(g, key, nil), miniHTTP(h))
	},
	WrapCustom: func(g *guard.Guard, key keyfuncs.Func, h http.Handler) http.Handler {
		reject := func(c *miniCtx, rej *guard.Rejection) {
			for k, v := range adaptertest.CustomAnswer(rej) {
				c.Header.Set(k, v)
			}
			c.Status = adaptertest.CustomStatus
		}
		return miniServer(throttleMini(g, key, reject), miniHTTP(h))
	},
	Routes: func(g *guard.Guard, key keyfuncs.Func, routes map[string]http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h, ok := routes[r.URL.Path]
			if !ok {
				http.NotFound(w, r)
				return
			}
			route := func(c *miniCtx) { c.Route = r.URL.Path } // mini's router, for routes without wildcards
			miniServer(route, throttleMini(g, key, nil), miniHTTP(h)).ServeHTTP(w, r)
		})
	},
	Bare:     func(h http.Handler) http.Handler { return miniServer(miniHTTP(h)) },
	Buffered: true, // mini collects the whole response in its context
}

// miniHTTP runs h as a mini handler.
func miniHTTP(h http.Handler) miniHandler {
	return func(c *miniCtx) { h.ServeHTTP(miniWriter{c}, c.Request) }
}

// miniServer serves a mini chain to net/http, copying out what it wrote.
func miniServer(chain ...miniHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := serveMini(r, chain...)
		maps.Copy(w.Header(), c.Header)
		if c.Status == 0 {
			c.Status = http.StatusOK
		}
		w.WriteHeader(c.Status)
		_, _ = w.Write(c.Body.Bytes())
	})
}

func TestMiniAdapter(t *testing.T) { adaptertest.Run(t, miniAdapter) }

// TestMiniAdapterChain checks the mini idioms: a rejection aborts the rest of
// the chain, and the status Run reports is the one a later middleware
// answered with, not the final handler's.
func TestMiniAdapterChain(t *testing.T) {
	g := guard.Lock(newLock(t, throttle.LockConfig{Name: "submit"}))
	var outer []int // what a middleware before the adapter saw
	var handled atomic.Int32
	denyFirst := true
	app := []miniHandler{
		func(c *miniCtx) { c.Next(); outer = append(outer, c.Status) },
		throttleMini(g, keyfuncs.Header("X-User-ID"), nil),
		func(c *miniCtx) { // an authorisation check that fails once
			if denyFirst {
				denyFirst = false
				c.String(http.StatusForbidden, "no\n")
				c.Abort()
			}
		},
		func(c *miniCtx) { handled.Add(1); c.String(http.StatusCreated, "ok\n") },
	}
	for range 3 {
		r := httptest.NewRequest(http.MethodPost, "/submit", nil)
		r.Header.Set("X-User-ID", "42")
		serveMini(r, app...)
	}
	// 403 released the key, 201 kept it, and the third request was turned
	// away before the handler.
	require.Equal(t, []int{403, 201, 429}, outer, "statuses")
	require.Equal(t, int32(1), handled.Load(), "handler runs")
}

func newLock(t *testing.T, c throttle.LockConfig) *throttle.Lock {
	t.Helper()
	l, err := throttle.NewLock(memstore.New(), c)
	require.NoError(t, err)
	return l
}

// serveOrder serves a POST /orders with g and key through h, the response
// recorded whole and fed to the capture, and returns whether h ran, the
// rejection left to answer (answered on the writer returned) and what was
// written.
func serveOrder(g *guard.Guard, key string, h http.HandlerFunc) (bool, *guard.Rejection, *httptest.ResponseRecorder) {
	w := httptest.NewRecorder()
	call := flow.Call{Route: "/orders", ID: key}
	var rej guard.Rejection
	ok := g.Serve(w, httptest.NewRequest(http.MethodPost, "/orders", nil), call, &rej,
		func(r *http.Request, c *guard.Capture) int {
			rec := httptest.NewRecorder()
			h(rec, r)
			c.WriteHeader(rec.Header(), rec.Code)
			c.Write(rec.Body.Bytes())
			maps.Copy(w.Header(), rec.Header())
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return rec.Code
		})
	if ok {
		return true, nil, w
	}
	if rej.Reason == guard.ReasonReplayed {
		rej.Write(w)
		return false, nil, w
	}
	return false, &rej, w
}
