package echoadapter_test

import (
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/go-throttle/throttle/echoadapter"
	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/keyfuncs"
)

// TestNilArguments checks that a wiring mistake panics at start-up with a
// message naming what is missing, rather than on the first request.
func TestNilArguments(t *testing.T) {
	g, _ := submitGuard(t)
	adaptertest.Panics(t, "non-nil Guard and key function", func() { echoadapter.Middleware(g, keyfuncs.Func(nil)) })
	adaptertest.Panics(t, "non-nil Guard and key function", func() {
		echoadapter.Middleware(g, (func(echo.Context) (string, error))(nil))
	})
	adaptertest.Panics(t, "non-nil Guard", func() { echoadapter.Middleware(nil, adaptertest.UserKey()) })
	adaptertest.Panics(t, "non-nil Guard", func() {
		echoadapter.Middleware(nil, echoadapter.Request(adaptertest.UserKey()))
	})
}
