// Command gin is a gin service whose POST /submit accepts one submission per
// user per window and answers the duplicates (double clicks, client and
// proxy retries) with 429 Too Many Requests, and whose GET /search allows
// each user 10 searches a minute.
//
//	go run ./examples/gin                          # in-memory store
//	go run ./examples/gin -redis 127.0.0.1:6379    # locks shared through Redis
//	curl -i -X POST -H 'X-User-ID: 42' localhost:8080/submit
//	curl -i -H 'X-User-ID: 42' 'localhost:8080/search?q=gcra'
//
// Flags: -addr (default 127.0.0.1:8080), -redis (empty: in-memory store),
// -window (default 5s). The net/http and echo examples build the same key for
// the same user, so that all three share locks and quotas when pointed at
// one Redis.
package main

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/go-throttle/throttle/examples/internal/demo"
	"github.com/go-throttle/throttle/ginadapter"
	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
)

func main() { demo.Main("gin", routes) }

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
	// same as in the net/http and echo examples.
	key := keyfuncs.FirstOf(keyfuncs.Header("X-User-ID"), keyfuncs.RemoteIP())

	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.HandleMethodNotAllowed = true // 405, not 404, for GET /submit or POST /search, like the other examples
	r.Use(gin.Recovery())
	r.POST("/submit", ginadapter.Middleware(limiter, key), submit)
	r.GET("/search", ginadapter.Middleware(search, key), searchHandler)
	r.GET("/healthz", healthz) // no throttle middleware: never throttled
	return r, nil
}

func submit(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "accepted", "server": "gin"})
}

func searchHandler(c *gin.Context) {
	c.Data(http.StatusOK, "application/json", demo.SearchJSON(c.Request))
}

func healthz(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
}
