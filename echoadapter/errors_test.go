package echoadapter_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/echoadapter"
	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
)

var (
	errSubmit  = errors.New("submit failed")
	errInvalid = errors.New("invalid amount")
)

// appErrors is an application HTTPErrorHandler of the usual kind: it
// leaves committed responses alone, renders *echo.HTTPError with its code,
// errInvalid with 422, and any other error with 500.
func appErrors(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	code := http.StatusInternalServerError
	var he *echo.HTTPError
	switch {
	case errors.As(err, &he):
		code = he.Code
	case errors.Is(err, errInvalid):
		code = http.StatusUnprocessableEntity
	}
	_ = c.JSON(code, map[string]string{"error": http.StatusText(code)})
}

// errorEcho serves POST /submit with h (told which call it is, from 1)
// behind the throttle middleware for g, then mw, on an Echo whose
// HTTPErrorHandler is errorHandler (echo's default when nil).
func errorEcho(t *testing.T, g *guard.Guard, errorHandler echo.HTTPErrorHandler, h func(c echo.Context, call int) error, mw ...echo.MiddlewareFunc) *echo.Echo {
	t.Helper()
	e := echo.New()
	e.Logger.SetOutput(io.Discard)
	if errorHandler != nil {
		e.HTTPErrorHandler = errorHandler
	}
	calls := 0
	e.POST("/submit", func(c echo.Context) error {
		calls++
		return h(c, calls)
	}, append([]echo.MiddlewareFunc{echoadapter.Middleware(g, adaptertest.UserKey())}, mw...)...)
	return e
}

// recoverToCError does what echo's middleware.Recover does by default: it
// turns a panic into an error handed to c.Error.
func recoverToCError(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		defer func() {
			if p := recover(); p != nil {
				c.Error(fmt.Errorf("recovered: %v", p))
			}
		}()
		return next(c)
	}
}

// serveAll sends POST /submit as u1 once per status in want and checks the
// answers.
func serveAll(t *testing.T, e *echo.Echo, want ...int) {
	t.Helper()
	for i, code := range want {
		got := adaptertest.Serve(e, adaptertest.Submit("u1"))
		require.Equal(t, code, got.Code, "request %d (body %q)", i+1, got.Body.String())
	}
}

// failOnce returns a handler that runs fail on its first call and answers
// 201 on the others.
func failOnce(fail func(c echo.Context) error) func(echo.Context, int) error {
	return func(c echo.Context, call int) error {
		if call == 1 {
			return fail(c)
		}
		return c.NoContent(http.StatusCreated)
	}
}

// Every way an echo handler fails releases the Dedupe key, so the retry is
// admitted and its success kept: an error returned to the middleware (the
// status is worked out as the error handler will render it) or handed to
// c.Error, which renders and commits the response at once (the committed
// status is read), under echo's DefaultHTTPErrorHandler and an application's
// own.
func TestHandlerErrorReleases(t *testing.T) {
	cases := []struct {
		name   string
		fail   func(c echo.Context) error
		status int // the answer to the failed request
		mw     []echo.MiddlewareFunc
	}{
		{name: "returned error", status: 500,
			fail: func(echo.Context) error { return errSubmit }},
		{name: "returned HTTPError 422", status: 422,
			fail: func(echo.Context) error { return echo.NewHTTPError(http.StatusUnprocessableEntity) }},
		{name: "c.Error, nil returned", status: 500,
			fail: func(c echo.Context) error { c.Error(errSubmit); return nil }},
		{name: "c.Error with an HTTPError", status: 422,
			fail: func(c echo.Context) error { c.Error(echo.NewHTTPError(http.StatusUnprocessableEntity)); return nil }},
		{name: "c.Error, then returned as well", status: 500,
			fail: func(c echo.Context) error { c.Error(errSubmit); return errSubmit }},
		{name: "panic turned into c.Error after the middleware", status: 500,
			fail: func(echo.Context) error { panic(errSubmit) },
			mw:   []echo.MiddlewareFunc{recoverToCError}},
	}
	for _, handler := range []struct {
		name string
		h    echo.HTTPErrorHandler
	}{{"default error handler", nil}, {"application error handler", appErrors}} {
		for _, tc := range cases {
			t.Run(handler.name+"/"+tc.name, func(t *testing.T) {
				g, _ := submitGuard(t)
				e := errorEcho(t, g, handler.h, failOnce(tc.fail), tc.mw...)
				rec := adaptertest.Serve(e, adaptertest.Submit("u1"))
				adaptertest.Status(t, rec, tc.status)
				require.Equal(t, 1, strings.Count(rec.Body.String(), "{"), "errors rendered in %q", rec.Body.String())
				serveAll(t, e, http.StatusCreated, http.StatusTooManyRequests)
			})
		}
	}
}

// A committed response stands: an error returned, or handed to c.Error, only
// to be logged after the 201 was written does not release the key.
func TestErrorAfterCommittedSuccessKeeps(t *testing.T) {
	for name, h := range map[string]func(c echo.Context, _ int) error{
		"returned": func(c echo.Context, _ int) error {
			_ = c.NoContent(http.StatusCreated)
			return errSubmit
		},
		"c.Error": func(c echo.Context, _ int) error {
			_ = c.NoContent(http.StatusCreated)
			c.Error(errSubmit)
			return nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			g, _ := submitGuard(t)
			e := errorEcho(t, g, appErrors, h)
			serveAll(t, e, http.StatusCreated, http.StatusTooManyRequests)
		})
	}
}

// An application HTTPErrorHandler that maps a plain error to a status of its
// own (errInvalid to 422) is not known to the middleware: for a returned
// error it takes the status echo's DefaultHTTPErrorHandler would answer, 500.
// Through c.Error the response is committed before the middleware reads it,
// so the status is exact, and a guard.WithFailed that keeps keys on client
// errors decides on the 422 the client got.
func TestAppErrorStatusThroughCError(t *testing.T) {
	serverErrorsOnly := func(t *testing.T) *guard.Guard {
		l := adaptertest.NewLock(t, throttle.LockConfig{Name: "submit"})
		return guard.Lock(l, guard.WithFailed(func(s int) bool { return s >= 500 }))
	}
	t.Run("c.Error: exact", func(t *testing.T) {
		e := errorEcho(t, serverErrorsOnly(t), appErrors, failOnce(func(c echo.Context) error {
			c.Error(errInvalid)
			return nil
		}))
		serveAll(t, e, http.StatusUnprocessableEntity, http.StatusTooManyRequests)
	})
	t.Run("returned: taken as 500", func(t *testing.T) {
		e := errorEcho(t, serverErrorsOnly(t), appErrors, failOnce(func(echo.Context) error { return errInvalid }))
		serveAll(t, e, http.StatusUnprocessableEntity, http.StatusCreated, http.StatusTooManyRequests)
	})
}

// Cooldown keeps the key whatever the handler reports.
func TestErrorCooldownKeeps(t *testing.T) {
	for name, fail := range map[string]func(c echo.Context) error{
		"returned": func(echo.Context) error { return errSubmit },
		"c.Error":  func(c echo.Context) error { c.Error(errSubmit); return nil },
	} {
		t.Run(name, func(t *testing.T) {
			g, _ := adaptertest.LockGuard(t, throttle.LockConfig{Name: "submit", Mode: throttle.Cooldown})
			e := errorEcho(t, g, nil, failOnce(fail))
			serveAll(t, e, http.StatusInternalServerError, http.StatusTooManyRequests)
		})
	}
}
