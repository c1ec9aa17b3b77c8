package ginadapter_test

import (
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/go-throttle/throttle/internal/adaptertest"
)

// BenchmarkMiddleware: one goroutine, memory store; see adaptertest.Bench
// for the cases and their key cardinality.
func BenchmarkMiddleware(b *testing.B) {
	a := adapter
	a.Noop = func(h http.Handler) http.Handler { return engine(h, func(c *gin.Context) { c.Next() }) }
	adaptertest.Bench(b, a)
}
