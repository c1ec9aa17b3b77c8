// Command echo is an echo service whose POST /submit accepts one submission
// per user per window and answers the duplicates (double clicks, client and
// proxy retries) with 429 Too Many Requests, and whose GET /search allows
// each user 10 searches a minute.
//
//	go run ./examples/echo                          # in-memory store
//	go run ./examples/echo -redis 127.0.0.1:6379    # locks shared through Redis
//	curl -i -X POST -H 'X-User-ID: 42' localhost:8080/submit
//	curl -i -H 'X-User-ID: 42' 'localhost:8080/search?q=gcra'
//
// Flags: -addr (default 127.0.0.1:8080), -redis (empty: in-memory store),
// -window (default 5s). The net/http and gin examples build the same key for
// the same user, so that all three share locks and quotas when pointed at
// one Redis.
package main

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/go-throttle/throttle/echoadapter"
	"github.com/go-throttle/throttle/examples/internal/demo"
	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
)

func main() { demo.Main("echo", routes) }

func routes(store throttle.Store, s demo.Settings) (http.Handler, error) {
	// Dedupe is the zero Mode: an accepted submission holds its key for the
	// window; a failed one (status >= 400) frees it so that the user can retry.
	limiter, err := throttle.New(store, throttle.Policy{
		Name:           "submit",
		Window:         s.Window,
		WhenStoreFails: s.WhenStoreFails, // -fail: what a request gets while Redis fails
		Fallback:       s.Fallback,
	})
	if err != nil {
		return nil, err
	}
	// GET /search: a Quota of 10 requests per minute per user, whatever
	// -window says (see demo.SearchPolicy).
	search, err := demo.NewSearchLimiter(store, s)
	if err != nil {
		return nil, err
	}
	// Who is submitting or searching: the X-User-ID header, or the peer's
	// IP without it. keyfuncs works on the *http.Request, so the key is the
	// same as in the net/http and gin examples.
	key := keyfuncs.FirstOf(keyfuncs.Header("X-User-ID"), keyfuncs.RemoteIP())

	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.POST("/submit", submit, echoadapter.Middleware(limiter, key))
	e.GET("/search", searchHandler, echoadapter.Middleware(search, key))
	e.GET("/healthz", healthz) // no throttle middleware: never throttled
	return e, nil
}

func submit(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "accepted", "server": "echo"})
}

func searchHandler(c echo.Context) error {
	return c.JSONBlob(http.StatusOK, demo.SearchJSON(c.Request()))
}

func healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}
