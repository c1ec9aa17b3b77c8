package fiberadapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/adaptor"
	"github.com/gofiber/fiber/v3/middleware/recover"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/fiberadapter"
	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
)

var errSubmit = errors.New("submit failed")

// userKey is the suite's user key, native.
var userKey = fiberadapter.Header(adaptertest.UserHeader)

// serveAll sends POST /submit as u1 once per status in want to h and
// checks the answers.
func serveAll(t *testing.T, h http.Handler, want ...int) {
	t.Helper()
	for i, code := range want {
		got := adaptertest.Serve(h, adaptertest.Submit("u1"))
		require.Equal(t, code, got.Code, "request %d (body %q)", i+1, got.Body.String())
	}
}

// failOnce serves POST /submit on app behind the middleware of a fresh
// Dedupe guard: fail answers the first call, 201 the others.
func failOnce(t *testing.T, app *fiber.App, fail fiber.Handler, opts ...fiberadapter.Option) http.Handler {
	t.Helper()
	g, _ := submitGuard(t)
	calls := 0
	app.Post("/submit", fiberadapter.Middleware(g, userKey, opts...), func(c fiber.Ctx) error {
		if calls++; calls == 1 {
			return fail(c)
		}
		return c.SendStatus(http.StatusCreated)
	})
	return adaptor.FiberApp(app)
}

// Every way a fiber handler fails releases the Dedupe key, so the retry is
// admitted and its success kept: an error returned for the app's
// ErrorHandler (the status is the one fiber's default ErrorHandler gives
// it), an error status written, and a panic recovered upstream.
func TestHandlerFailureReleases(t *testing.T) {
	cases := []struct {
		name   string
		fail   fiber.Handler
		status int // the answer to the failed request
	}{
		{"returned error", func(fiber.Ctx) error { return errSubmit }, 500},
		{"returned fiber.Error 422", func(fiber.Ctx) error { return fiber.NewError(422, "bad amount") }, 422},
		{"wrapped fiber.Error 409", func(fiber.Ctx) error { return fmt.Errorf("wrapped: %w", fiber.ErrConflict) }, 409},
		{"written 503", func(c fiber.Ctx) error { return c.SendStatus(503) }, 503},
		{"panic under recover", func(fiber.Ctx) error { panic(errSubmit) }, 500},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			app := fiber.New()
			app.Use(recover.New())
			h := failOnce(t, app, tc.fail)
			serveAll(t, h, tc.status, http.StatusCreated, http.StatusTooManyRequests)
		})
	}
}

// A returned error that fiber renders as a success (a fiber.Error of 3xx)
// keeps the key, as the status the client got says.
func TestReturnedSuccessErrorKeeps(t *testing.T) {
	h := failOnce(t, fiber.New(), func(fiber.Ctx) error { return fiber.NewError(http.StatusFound, "elsewhere") })
	serveAll(t, h, http.StatusFound, http.StatusTooManyRequests)
}

// A reject handler returning a fiber.Error lets the app's own ErrorHandler
// render the rejection, with the standard header fields set; the body
// holds no key.
func TestRejectionRenderedByErrorHandler(t *testing.T) {
	app := fiber.New(fiber.Config{ErrorHandler: func(c fiber.Ctx, err error) error {
		code := http.StatusInternalServerError
		var fe *fiber.Error
		if errors.As(err, &fe) {
			code = fe.Code
		}
		return c.Status(code).JSON(fiber.Map{"app_error": err.Error(), "code": code})
	}})
	h := failOnce(t, app, func(c fiber.Ctx) error { return c.SendStatus(http.StatusCreated) },
		fiberadapter.WithRejectHandler(func(c fiber.Ctx, rej *guard.Rejection) error {
			return fiber.NewError(rej.Status, rej.Detail)
		}))
	adaptertest.Status(t, adaptertest.Serve(h, adaptertest.Submit("user-1")), http.StatusCreated)
	rec := adaptertest.Serve(h, adaptertest.Submit("user-1"))
	adaptertest.Status(t, rec, http.StatusTooManyRequests)
	var body struct {
		AppError string `json:"app_error"`
		Code     int    `json:"code"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body), "body %q", rec.Body.String())
	require.Equal(t, 429, body.Code)
	require.NotEmpty(t, body.AppError)
	require.NotContains(t, rec.Body.String(), "user-1")
	adaptertest.RetryAfter(t, rec.Header())
	adaptertest.CheckRateLimit(t, rec.Header(), "submit", `"submit";q=1;w=5`, 5)
	// A missing key is rejected through the same handler: 400.
	adaptertest.Status(t, adaptertest.Serve(h, adaptertest.Submit("")), http.StatusBadRequest)
}

// The chain runs with the lease in c.Context(); a middleware upstream gets
// its own context back once the chain returned.
func TestContext(t *testing.T) {
	g, _ := adaptertest.LockGuard(t, throttle.LockConfig{Name: "job", Mode: throttle.Exclusive})
	type key struct{}
	var inside, after context.Context
	app := fiber.New()
	app.Post("/submit", func(c fiber.Ctx) error {
		c.SetContext(context.WithValue(c.Context(), key{}, "upstream"))
		err := c.Next()
		after = c.Context()
		return err
	}, fiberadapter.Middleware(g, userKey), func(c fiber.Ctx) error {
		inside = c.Context()
		return nil
	})
	adaptertest.Status(t, adaptertest.Serve(adaptor.FiberApp(app), adaptertest.Submit("u1")), http.StatusOK)
	require.NotNil(t, throttle.LeaseFrom(inside), "lease in the chain's context")
	require.Equal(t, "upstream", inside.Value(key{}), "the chain's context derives from upstream's")
	require.Nil(t, throttle.LeaseFrom(after), "lease in upstream's context after the chain")
	require.Equal(t, "upstream", after.Value(key{}))
}
