package adaptertest_test

import (
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/labstack/echo/v4"

	"github.com/go-throttle/throttle/echoadapter"
	"github.com/go-throttle/throttle/ginadapter"
	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/nethttp"
	"github.com/go-throttle/throttle/throttle/guard"
)

// BenchmarkAdapters runs the cases of adaptertest.Bench for the three
// adapters in one process, one after the other: the figures to compare
// the adapters by. Each adapter's own BenchmarkMiddleware runs in its own
// test binary, whose code layout and heap differ; nethttp's came out about
// 5% faster in its own binary than beside the others, which is not the
// adapter's doing.
func BenchmarkAdapters(b *testing.B) {
	for _, a := range []adaptertest.Adapter{benchNethttp, benchGin, benchEcho} {
		b.Run(a.Name, func(b *testing.B) { adaptertest.Bench(b, a) })
	}
}

var benchNethttp = adaptertest.Adapter{
	Name: "nethttp",
	Wrap: func(g *guard.Guard, key keyfuncs.Func, h http.Handler) http.Handler {
		return nethttp.Middleware(g, key)(h)
	},
	Bare: func(h http.Handler) http.Handler { return h },
	Noop: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) })
	},
}

// ginEngine serves h for every method and path behind mw, as the gin
// adapter's own tests do.
func ginEngine(h http.Handler, mw ...gin.HandlerFunc) *gin.Engine {
	e := gin.New()
	e.Any("/*path", append(mw, gin.WrapH(h))...)
	return e
}

var benchGin = adaptertest.Adapter{
	Name: "gin",
	Wrap: func(g *guard.Guard, key keyfuncs.Func, h http.Handler) http.Handler {
		return ginEngine(h, ginadapter.Middleware(g, key))
	},
	Bare: func(h http.Handler) http.Handler { return ginEngine(h) },
	Noop: func(h http.Handler) http.Handler { return ginEngine(h, func(c *gin.Context) { c.Next() }) },
}

// echoEngine serves h for every method and path behind mw, as the echo
// adapter's own tests do.
func echoEngine(h http.Handler, mw ...echo.MiddlewareFunc) *echo.Echo {
	e := echo.New()
	e.Any("/*", echo.WrapHandler(h), mw...)
	return e
}

var benchEcho = adaptertest.Adapter{
	Name: "echo",
	Wrap: func(g *guard.Guard, key keyfuncs.Func, h http.Handler) http.Handler {
		return echoEngine(h, echoadapter.Middleware(g, key))
	},
	Bare: func(h http.Handler) http.Handler { return echoEngine(h) },
	Noop: func(h http.Handler) http.Handler {
		return echoEngine(h, func(next echo.HandlerFunc) echo.HandlerFunc {
			return func(c echo.Context) error { return next(c) }
		})
	},
}
