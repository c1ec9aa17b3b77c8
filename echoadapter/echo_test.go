package echoadapter_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/echoadapter"
	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle/guard"
)

// A reject handler returning an *echo.HTTPError lets the application's own
// HTTPErrorHandler render the rejection, with the standard headers set.
func TestHTTPErrorRenderedByApp(t *testing.T) {
	g, _ := submitGuard(t)
	e := echo.New()
	e.Debug = true // even in debug mode no internal error may show
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		var he *echo.HTTPError
		if !errors.As(err, &he) {
			he = echo.NewHTTPError(http.StatusInternalServerError)
		}
		_ = c.JSON(he.Code, map[string]any{"app_error": fmt.Sprint(he.Message), "code": he.Code, "debug": err.Error()})
	}
	e.POST("/submit", func(c echo.Context) error { return c.NoContent(http.StatusCreated) },
		echoadapter.Middleware(g, adaptertest.UserKey(), echoadapter.WithRejectHandler(
			func(c echo.Context, rej *guard.Rejection) error { return echo.NewHTTPError(rej.Status, rej.Detail) })))

	adaptertest.Status(t, adaptertest.Serve(e, adaptertest.Submit("user-1")), http.StatusCreated)
	rec := adaptertest.Serve(e, adaptertest.Submit("user-1"))
	adaptertest.Status(t, rec, http.StatusTooManyRequests)
	var body struct {
		AppError string `json:"app_error"`
		Code     int    `json:"code"`
		Debug    string `json:"debug"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body), "app error body %q", rec.Body.String())
	require.Equal(t, 429, body.Code, "app error body %q: code", rec.Body.String())
	require.NotEmpty(t, body.AppError, "app error body %q: app_error", rec.Body.String())
	for _, f := range []string{"user-1", "throttle:", "{submit"} {
		require.NotContains(t, rec.Body.String(), f)
	}
	adaptertest.RetryAfter(t, rec.Header())
	adaptertest.CheckRateLimit(t, rec.Header(), "submit", `"submit";q=1;w=5`, 5)

	rec = adaptertest.Serve(e, adaptertest.Submit(""))
	adaptertest.Status(t, rec, http.StatusBadRequest)
	require.NotContains(t, rec.Body.String(), "keyfuncs", "the bad-key body shows the key error")
}

// The handler's status comes from its returned error the way echo renders
// it, or from the committed response.
func TestHandlerStatus(t *testing.T) {
	cases := []struct {
		name    string
		handler echo.HandlerFunc
		kept    bool
	}{
		{"nil error", func(c echo.Context) error { return nil }, true},
		{"written 201", func(c echo.Context) error { return c.NoContent(http.StatusCreated) }, true},
		{"HTTPError 503", func(c echo.Context) error { return echo.NewHTTPError(http.StatusServiceUnavailable) }, false},
		{"HTTPError 302", func(c echo.Context) error { return echo.NewHTTPError(http.StatusFound) }, true},
		{"internal HTTPError 409", func(c echo.Context) error {
			return echo.NewHTTPError(http.StatusOK).SetInternal(echo.NewHTTPError(http.StatusConflict))
		}, false},
		{"plain error", func(c echo.Context) error { return errors.New("boom") }, false},
		{"wrapped HTTPError", func(c echo.Context) error {
			return fmt.Errorf("wrapped: %w", echo.NewHTTPError(http.StatusOK)) // echo answers 500
		}, false},
		{"error after commit", func(c echo.Context) error {
			_ = c.NoContent(http.StatusAccepted)
			return errors.New("too late")
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, _ := submitGuard(t)
			e := echo.New()
			e.POST("/submit", tc.handler, echoadapter.Middleware(g, adaptertest.UserKey()))
			adaptertest.Serve(e, adaptertest.Submit("u1"))
			got := adaptertest.Serve(e, adaptertest.Submit("u1")).Code == http.StatusTooManyRequests
			require.Equal(t, tc.kept, got, "key kept")
		})
	}
}

// Skipped requests are not guarded.
func TestSkipper(t *testing.T) {
	g, _ := submitGuard(t)
	e := echo.New()
	e.Any("/*", func(c echo.Context) error { return c.NoContent(http.StatusCreated) },
		echoadapter.Middleware(g, adaptertest.UserKey(), echoadapter.WithSkipper(
			func(c echo.Context) bool { return c.Request().Method == http.MethodGet })))
	for range 2 {
		r := adaptertest.Submit("")
		r.Method = http.MethodGet
		adaptertest.Status(t, adaptertest.Serve(e, r), http.StatusCreated)
	}
	adaptertest.Status(t, adaptertest.Serve(e, adaptertest.Submit("u1")), http.StatusCreated)
	adaptertest.Status(t, adaptertest.Serve(e, adaptertest.Submit("u1")), http.StatusTooManyRequests)
}

// echo's own key sources.
func TestContextKeys(t *testing.T) {
	setUser := func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if u := c.Request().Header.Get("X-Auth"); u != "" {
				c.Set("user", u)
			}
			return next(c)
		}
	}
	ok := func(c echo.Context) error { return c.NoContent(http.StatusCreated) }

	t.Run("Value and Path", func(t *testing.T) {
		g, _ := submitGuard(t)
		e := echo.New()
		mw := echoadapter.Middleware(g, keyfuncs.Join(echoadapter.Value("user"), echoadapter.Path()))
		e.POST("/a/:id", ok, setUser, mw)
		e.POST("/b/:id", ok, setUser, mw)
		do := func(path, user string) int {
			r := adaptertest.Submit("")
			r.URL.Path = path
			if user != "" {
				r.Header.Set("X-Auth", user)
			}
			return adaptertest.Serve(e, r).Code
		}
		want := []struct {
			path, user string
			code       int
		}{
			{"/a/1", "alice", 201}, {"/a/2", "alice", 429}, // same route pattern
			{"/b/1", "alice", 201}, {"/a/1", "bob", 201}, {"/a/1", "", 400},
		}
		for _, w := range want {
			require.Equal(t, w.code, do(w.path, w.user), "%s as %q", w.path, w.user)
		}
	})

	t.Run("RealIP with IPExtractor", func(t *testing.T) {
		g, _ := submitGuard(t)
		e := echo.New()
		e.IPExtractor = echo.ExtractIPDirect()
		key, err := echoadapter.RealIP(e)
		require.NoError(t, err)
		e.POST("/submit", ok, echoadapter.Middleware(g, key))
		for i, code := range []int{201, 429} {
			r := adaptertest.Submit("")
			r.Header.Set("X-Forwarded-For", fmt.Sprintf("203.0.113.%d", i)) // spoofed
			adaptertest.Status(t, adaptertest.Serve(e, r), code)
		}
	})

	// echo v4's default (no IPExtractor: RealIP believes a client's
	// X-Forwarded-For, a new identity per request) is refused up front.
	t.Run("RealIP refuses the default Echo", func(t *testing.T) {
		key, err := echoadapter.RealIP(echo.New())
		require.Error(t, err, "RealIP(echo.New())")
		require.Nil(t, key, "RealIP(echo.New())")
	})

	t.Run("FirstOf matches keyfuncs", func(t *testing.T) {
		g, _ := submitGuard(t)
		e := echo.New()
		e.IPExtractor = echo.ExtractIPDirect()
		// Request(ExampleKey()) and the echo-native chain build one key.
		e.POST("/a", ok, echoadapter.Middleware(g, adaptertest.ExampleKey()))
		realIP, err := echoadapter.RealIP(e)
		require.NoError(t, err)
		e.POST("/b", ok, echoadapter.Middleware(g, keyfuncs.FirstOf(
			echoadapter.Request(adaptertest.UserKey()), realIP)))
		r := adaptertest.Submit("")
		r.URL.Path = "/a"
		adaptertest.Status(t, adaptertest.Serve(e, r), 201)
		r = adaptertest.Submit("")
		r.URL.Path = "/b"
		adaptertest.Status(t, adaptertest.Serve(e, r), 429)
	})
}
