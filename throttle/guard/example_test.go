package guard_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/flow"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// miniCtx is the request context of mini, a made-up framework with gin's
// shape: a context per request collects the response, and a chain of
// handlers runs through Next until one calls Abort.
type miniCtx struct {
	Request *http.Request
	Route   string // the route matched, such as "/orders/:id"
	Status  int    // 0 until something is written
	Header  http.Header
	Body    bytes.Buffer

	chain []miniHandler
	index int
}

type miniHandler func(c *miniCtx)

// serveMini runs r through chain.
func serveMini(r *http.Request, chain ...miniHandler) *miniCtx {
	c := &miniCtx{Request: r, Header: http.Header{}, chain: chain, index: -1}
	c.Next()
	return c
}

// Next runs the rest of the chain; a handler that calls it runs code after it.
func (c *miniCtx) Next() {
	for c.index++; c.index < len(c.chain); c.index++ {
		c.chain[c.index](c)
	}
}

// Abort keeps the rest of the chain from running.
func (c *miniCtx) Abort() { c.index = len(c.chain) }

// String answers with a text body.
func (c *miniCtx) String(status int, s string) {
	c.Status = status
	c.Body.WriteString(s)
}

// The adapter starts here.

// throttleMini guards the rest of the chain with g, keyed by key. reject
// answers the requests turned away; nil lets the guard answer them as every
// adapter does by default.
func throttleMini(g *guard.Guard, key keyfuncs.Func, reject func(*miniCtx, *guard.Rejection)) miniHandler {
	return func(c *miniCtx) {
		id, err := key(c.Request)
		var rej guard.Rejection
		if g.Serve(miniWriter{c}, c.Request, flow.Call{Route: c.Route, ID: id, Err: err}, &rej,
			func(r *http.Request, capture *guard.Capture) int {
				// mini collects the whole response before sending it, so
				// the capture of a Replay's first request gets it once
				// the chain returned.
				c.Request = r
				c.Next()
				if c.Status == 0 {
					c.Status = http.StatusOK
				}
				capture.WriteHeader(c.Header, c.Status)
				capture.Write(c.Body.Bytes())
				return c.Status
			}) {
			return
		}
		if reject == nil || rej.Reason == guard.ReasonReplayed { // a replay is the answer asked for
			rej.Write(miniWriter{c})
		} else {
			rej.SetHeader(c.Header)
			reject(c, &rej)
		}
		c.Abort()
	}
}

// miniWriter is an http.ResponseWriter that writes to a miniCtx.
type miniWriter struct{ c *miniCtx }

func (w miniWriter) Header() http.Header { return w.c.Header }

func (w miniWriter) WriteHeader(status int) {
	if w.c.Status == 0 {
		w.c.Status = status
	}
}

func (w miniWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.c.Body.Write(b)
}

// The adapter ends here.

// An adapter for another framework on net/http's types takes a Guard (here
// guard.Lock's, made once when the middleware is built) and translates its
// request, response and abort idioms for Guard.Serve. The same user's
// second submission within the lock's 5 s TTL is turned away, and a
// request without a user is never throttled under a shared key.
func Example() {
	lock, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "submit"})
	if err != nil {
		panic(err)
	}
	app := []miniHandler{
		throttleMini(guard.Lock(lock), keyfuncs.Header("X-User-ID"), nil),
		func(c *miniCtx) { c.String(http.StatusOK, "submitted\n") },
	}

	for _, user := range []string{"42", "42", ""} {
		r := httptest.NewRequest(http.MethodPost, "/submit", nil)
		if user != "" {
			r.Header.Set("X-User-ID", user)
		}
		c := serveMini(r, app...)
		fmt.Print(c.Status, " ")
		if s := c.Header.Get("Retry-After"); s != "" {
			fmt.Print("Retry-After: ", s, " ")
		}
		fmt.Print(c.Body.String())
	}
	// Output:
	// 200 submitted
	// 429 Retry-After: 5 {"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,"detail":"The same request was received moments ago. Retry after the window ends.","violated-policies":["submit"]}
	// 400 {"type":"https://pkg.go.dev/github.com/go-throttle/throttle/throttle/guard#ReasonBadKey","title":"Bad Request","status":400,"detail":"The request cannot be identified: header \"X-User-ID\": missing."}
}
