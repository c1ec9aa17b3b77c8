package fiberadapter_test

import (
	"testing"

	"github.com/gofiber/fiber/v3"

	"github.com/go-throttle/throttle/fiberadapter"
	"github.com/go-throttle/throttle/internal/adaptertest"
)

// TestNilArguments checks that a wiring mistake panics at start-up with a
// message naming what is missing, rather than on the first request.
func TestNilArguments(t *testing.T) {
	g, _ := submitGuard(t)
	adaptertest.Panics(t, "non-nil Guard and key function", func() {
		fiberadapter.Middleware(g, (func(fiber.Ctx) (string, error))(nil))
	})
	adaptertest.Panics(t, "non-nil Guard", func() { fiberadapter.Middleware(nil, userKey) })
}
