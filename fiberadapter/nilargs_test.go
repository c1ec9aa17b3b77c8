package fiberadapter_test

import (
	"net/http"
	"testing"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/adaptor"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/fiberadapter"
	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
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

// guard's functions of an *http.Request (guard.Skip here) cannot read a
// fiber request: the first request panics, naming the fix.
func TestHTTPRequestFunctions(t *testing.T) {
	l := adaptertest.NewLock(t, throttle.LockConfig{Name: "submit"})
	g := guard.Lock(l, guard.Skip(func(*http.Request) bool { return false }))
	app := fiber.New()
	app.Post("/submit", fiberadapter.Middleware(g, userKey), func(fiber.Ctx) error { return nil })
	p := adaptertest.ServePanic(adaptor.FiberApp(app), adaptertest.Submit("u1"))
	msg, _ := p.(string)
	require.Contains(t, msg, "guard.WithFlow", "panic %v", p)
}
