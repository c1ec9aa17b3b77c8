package ginadapter_test

import (
	"testing"

	"github.com/go-throttle/throttle/ginadapter"
	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/throttle"
)

// TestNilArguments checks that a wiring mistake panics at start-up with a
// message naming what is missing, rather than on the first request.
func TestNilArguments(t *testing.T) {
	l := adaptertest.NewLimiter(t, throttle.Policy{Name: "submit"})
	adaptertest.Panics(t, "non-nil key function", func() { ginadapter.Middleware(l, nil) })
	adaptertest.Panics(t, "non-nil key function", func() { ginadapter.ContextMiddleware(l, nil) })
	adaptertest.Panics(t, "non-nil Limiter", func() { ginadapter.Middleware(nil, adaptertest.UserKey()) })
	adaptertest.Panics(t, "non-nil Limiter", func() {
		ginadapter.ContextMiddleware(nil, ginadapter.Request(adaptertest.UserKey()))
	})
}
