package nethttp_test

import (
	"net/http"
	"testing"

	"go.uber.org/goleak"

	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/nethttp"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// adapter serves h on an http.ServeMux behind the middleware.
var adapter = adaptertest.Adapter{
	Name: "nethttp",
	Wrap: func(g *guard.Guard, key keyfuncs.Func, h http.Handler) http.Handler {
		return mux(nethttp.Middleware(g, key)(h))
	},
	WrapCustom: func(g *guard.Guard, key keyfuncs.Func, h http.Handler) http.Handler {
		return mux(nethttp.Middleware(g, key, nethttp.WithRejectHandler(
			func(w http.ResponseWriter, r *http.Request, rej *guard.Rejection) {
				for k, v := range adaptertest.CustomAnswer(rej) {
					w.Header().Set(k, v)
				}
				w.WriteHeader(adaptertest.CustomStatus)
			}))(h))
	},
	Routes: func(g *guard.Guard, key keyfuncs.Func, routes map[string]http.Handler) http.Handler {
		m := http.NewServeMux()
		for path, h := range routes {
			m.Handle(path, nethttp.Middleware(g, key)(h))
		}
		return m
	},
	Bare: func(h http.Handler) http.Handler { return mux(h) },
}

func mux(h http.Handler) http.Handler {
	m := http.NewServeMux()
	m.Handle("/", h)
	return m
}

// submitGuard is the guard of a Dedupe lock "submit" on a fresh memory
// store, and the lock.
func submitGuard(t testing.TB) (*guard.Guard, *throttle.Lock) {
	return adaptertest.LockGuard(t, throttle.LockConfig{Name: "submit"})
}

func TestSuite(t *testing.T) { adaptertest.Run(t, adapter) }

func TestStoreFailures(t *testing.T) { adaptertest.RunStoreFailures(t, adapter) }
