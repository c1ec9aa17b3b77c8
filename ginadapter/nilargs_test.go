package ginadapter_test

import (
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/go-throttle/throttle/ginadapter"
	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/keyfuncs"
)

// TestNilArguments checks that a wiring mistake panics at start-up with a
// message naming what is missing, rather than on the first request.
func TestNilArguments(t *testing.T) {
	g, _ := submitGuard(t)
	adaptertest.Panics(t, "non-nil Guard and key function", func() { ginadapter.Middleware(g, keyfuncs.Func(nil)) })
	adaptertest.Panics(t, "non-nil Guard and key function", func() {
		ginadapter.Middleware(g, (func(*gin.Context) (string, error))(nil))
	})
	adaptertest.Panics(t, "non-nil Guard", func() { ginadapter.Middleware(nil, adaptertest.UserKey()) })
	adaptertest.Panics(t, "non-nil Guard", func() {
		ginadapter.Middleware(nil, ginadapter.Request(adaptertest.UserKey()))
	})
}
