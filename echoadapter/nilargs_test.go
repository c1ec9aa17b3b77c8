package echoadapter_test

import (
	"testing"

	"github.com/go-throttle/throttle/echoadapter"
	"github.com/go-throttle/throttle/internal/adaptertest"
)

// TestNilArguments checks that a wiring mistake panics at start-up with a
// message naming what is missing, rather than on the first request.
func TestNilArguments(t *testing.T) {
	g, _ := submitGuard(t)
	adaptertest.Panics(t, "non-nil key function", func() { echoadapter.Middleware(g, nil) })
	adaptertest.Panics(t, "non-nil key function", func() { echoadapter.ContextMiddleware(g, nil) })
	adaptertest.Panics(t, "non-nil Guard", func() { echoadapter.Middleware(nil, adaptertest.UserKey()) })
	adaptertest.Panics(t, "non-nil Guard", func() {
		echoadapter.ContextMiddleware(nil, echoadapter.Request(adaptertest.UserKey()))
	})
}
