package nethttp_test

import (
	"testing"

	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/nethttp"
	"github.com/go-throttle/throttle/throttle"
)

// TestNilArguments checks that a wiring mistake panics at start-up with a
// message naming what is missing, rather than on the first request.
func TestNilArguments(t *testing.T) {
	l := adaptertest.NewLimiter(t, throttle.Policy{Name: "submit"})
	adaptertest.Panics(t, "non-nil Limiter and key function", func() { nethttp.Middleware(l, nil) })
	adaptertest.Panics(t, "non-nil Limiter and key function", func() { nethttp.Middleware(nil, adaptertest.UserKey()) })
	adaptertest.Panics(t, "wraps a nil handler", func() { nethttp.Middleware(l, adaptertest.UserKey())(nil) })
}
