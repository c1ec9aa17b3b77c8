package echoadapter_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/go-throttle/throttle/echoadapter"
	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// A double submission within the lock's 5 s TTL is turned away with 429.
func Example() {
	lock, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "submit"})
	if err != nil {
		panic(err)
	}
	key := keyfuncs.FirstOf(keyfuncs.Header("X-User-ID"), keyfuncs.RemoteIP())

	e := echo.New()
	e.POST("/submit", func(c echo.Context) error {
		return c.JSON(http.StatusCreated, map[string]bool{"ok": true})
	}, echoadapter.Middleware(guard.Lock(lock), key))

	for range 2 {
		req := httptest.NewRequest(http.MethodPost, "/submit", nil)
		req.Header.Set("X-User-ID", "42")
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Header().Get("Content-Type"))
	}
	// Output:
	// 201 application/json
	// 429 application/problem+json
}

// Rejections rendered by the application's HTTPErrorHandler (here echo's
// default, which writes {"message": ...}), with Retry-After still set.
func ExampleWithRejectHandler() {
	lock, _ := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "submit"})
	e := echo.New()
	e.POST("/submit", func(c echo.Context) error {
		return c.NoContent(http.StatusCreated)
	}, echoadapter.Middleware(guard.Lock(lock), keyfuncs.Header("X-User-ID"),
		echoadapter.WithRejectHandler(func(c echo.Context, rej *guard.Rejection) error {
			return echo.NewHTTPError(rej.Status, rej.Detail)
		})))

	for range 2 {
		req := httptest.NewRequest(http.MethodPost, "/submit", nil)
		req.Header.Set("X-User-ID", "42")
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		line := fmt.Sprint(rec.Code, " Retry-After=", rec.Header().Get("Retry-After"), " ", rec.Body.String())
		fmt.Println(strings.TrimSpace(line))
	}
	// Output:
	// 201 Retry-After=
	// 429 Retry-After=5 {"message":"The same request was received moments ago. Retry after the window ends."}
}

// RealIP refuses an Echo without an IPExtractor, whose c.RealIP believes
// X-Forwarded-For from anyone; with echo.ExtractIPDirect() (clients connect
// directly) a client forging that header is still known by its own address.
func ExampleRealIP() {
	lock, _ := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "submit"})

	e := echo.New()
	if _, err := echoadapter.RealIP(e); err != nil {
		fmt.Println("no IPExtractor refused")
	}
	e.IPExtractor = echo.ExtractIPDirect() // behind proxies: echo.ExtractIPFromXFFHeader(echo.TrustIPRange(cidr))
	key, err := echoadapter.RealIP(e)
	if err != nil {
		panic(err)
	}
	e.POST("/submit", func(c echo.Context) error {
		return c.NoContent(http.StatusCreated)
	}, echoadapter.Middleware(guard.Lock(lock), key))

	for _, forged := range []string{"198.51.100.1", "198.51.100.2"} {
		req := httptest.NewRequest(http.MethodPost, "/submit", nil)
		req.RemoteAddr = "203.0.113.7:1234"
		req.Header.Set("X-Forwarded-For", forged)
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		fmt.Println(rec.Code)
	}
	// Output:
	// no IPExtractor refused
	// 201
	// 429
}
