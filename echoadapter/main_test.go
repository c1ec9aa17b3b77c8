package echoadapter_test

import (
	"net/http"
	"testing"

	"github.com/labstack/echo/v4"
	"go.uber.org/goleak"

	"github.com/go-throttle/throttle/echoadapter"
	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// engine serves h for every method and path on an echo.Echo behind mw.
func engine(h http.Handler, mw ...echo.MiddlewareFunc) *echo.Echo {
	e := echo.New()
	e.Any("/*", echo.WrapHandler(h), mw...)
	return e
}

var adapter = adaptertest.Adapter{
	Name: "echo",
	Wrap: func(g *guard.Guard, key keyfuncs.Func, h http.Handler) http.Handler {
		return engine(h, echoadapter.Middleware(g, key))
	},
	WrapCustom: func(g *guard.Guard, key keyfuncs.Func, h http.Handler) http.Handler {
		return engine(h, echoadapter.Middleware(g, key, echoadapter.WithRejectHandler(
			func(c echo.Context, rej *guard.Rejection) error {
				for k, v := range adaptertest.CustomAnswer(rej) {
					c.Response().Header().Set(k, v)
				}
				return c.NoContent(adaptertest.CustomStatus)
			})))
	},
	Routes: func(g *guard.Guard, key keyfuncs.Func, routes map[string]http.Handler) http.Handler {
		e := echo.New()
		for path, h := range routes {
			e.Any(path, echo.WrapHandler(h), echoadapter.Middleware(g, key))
		}
		return e
	},
	Bare: func(h http.Handler) http.Handler { return engine(h) },
}

// submitGuard is the guard of a Dedupe lock "submit" on a fresh memory
// store, and the lock.
func submitGuard(t testing.TB) (*guard.Guard, *throttle.Lock) {
	return adaptertest.LockGuard(t, throttle.LockConfig{Name: "submit"})
}

func TestSuite(t *testing.T) { adaptertest.Run(t, adapter) }

func TestStoreFailures(t *testing.T) { adaptertest.RunStoreFailures(t, adapter) }
