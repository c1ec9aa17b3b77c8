package echoadapter_test

import (
	"net/http"
	"testing"

	"github.com/go-throttle/throttle/throttle/guard"

	"github.com/labstack/echo/v4"
	"go.uber.org/goleak"

	"github.com/go-throttle/throttle/echoadapter"
	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
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
	Wrap: func(l *throttle.Limiter, key keyfuncs.Func, h http.Handler) http.Handler {
		return engine(h, echoadapter.Middleware(l, key))
	},
	WrapCustom: func(l *throttle.Limiter, key keyfuncs.Func, h http.Handler) http.Handler {
		return engine(h, echoadapter.Middleware(l, key, echoadapter.WithRejectHandler(
			func(c echo.Context, rej *guard.Rejection) error {
				c.Response().Header().Set(adaptertest.CustomHeader, rej.Reason.String())
				return c.NoContent(adaptertest.CustomStatus)
			})))
	},
	WrapCost: func(l *throttle.Limiter, key keyfuncs.Func, cost func(*http.Request) (int, error), h http.Handler) http.Handler {
		return engine(h, echoadapter.Middleware(l, key, echoadapter.WithCost(cost)))
	},
	Bare: func(h http.Handler) http.Handler { return engine(h) },
}

func TestSuite(t *testing.T) { adaptertest.Run(t, adapter) }

func TestStoreFailures(t *testing.T) { adaptertest.RunStoreFailures(t, adapter) }
