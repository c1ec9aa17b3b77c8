package nethttp_test

import (
	"testing"

	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/nethttp"
)

// TestNilArguments checks that a wiring mistake panics at start-up with a
// message naming what is missing, rather than on the first request.
func TestNilArguments(t *testing.T) {
	g, _ := submitGuard(t)
	adaptertest.Panics(t, "non-nil Guard and key function", func() { nethttp.Middleware(g, nil) })
	adaptertest.Panics(t, "non-nil Guard and key function", func() { nethttp.Middleware(nil, adaptertest.UserKey()) })
	adaptertest.Panics(t, "wraps a nil handler", func() { nethttp.Middleware(g, adaptertest.UserKey())(nil) })
}
