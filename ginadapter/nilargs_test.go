package ginadapter_test

import (
	"testing"

	"github.com/go-throttle/throttle/ginadapter"
	"github.com/go-throttle/throttle/internal/adaptertest"
)

// TestNilArguments checks that a wiring mistake panics at start-up with a
// message naming what is missing, rather than on the first request.
func TestNilArguments(t *testing.T) {
	g, _ := submitGuard(t)
	adaptertest.Panics(t, "non-nil key function", func() { ginadapter.Middleware(g, nil) })
	adaptertest.Panics(t, "non-nil key function", func() { ginadapter.ContextMiddleware(g, nil) })
	adaptertest.Panics(t, "non-nil Guard", func() { ginadapter.Middleware(nil, adaptertest.UserKey()) })
	adaptertest.Panics(t, "non-nil Guard", func() {
		ginadapter.ContextMiddleware(nil, ginadapter.Request(adaptertest.UserKey()))
	})
}
