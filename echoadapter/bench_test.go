package echoadapter_test

import (
	"net/http"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/go-throttle/throttle/internal/adaptertest"
)

// BenchmarkMiddleware: one goroutine, memory store; see adaptertest.Bench
// for the cases and their key cardinality.
func BenchmarkMiddleware(b *testing.B) {
	a := adapter
	a.Noop = func(h http.Handler) http.Handler {
		return engine(h, func(next echo.HandlerFunc) echo.HandlerFunc {
			return func(c echo.Context) error { return next(c) }
		})
	}
	adaptertest.Bench(b, a)
}
