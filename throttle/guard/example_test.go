package guard_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// miniCtx is the request context of mini, a made-up framework with gin's
// shape: a context per request collects the response, and a chain of
// handlers runs through Next until one calls Abort.
type miniCtx struct {
	Request *http.Request
	Status  int // 0 until something is written
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

// throttleMini guards the rest of the chain with l, keyed by key. reject
// answers the requests turned away; writeProblem is the standard answer.
func throttleMini(l *throttle.Limiter, key keyfuncs.Func, reject func(*miniCtx, *guard.Rejection)) miniHandler {
	g := guard.New(l) // once, when the middleware is built
	replay := l.Policy().Mode == throttle.Replay
	return func(c *miniCtx) {
		// 1. The identity; without one, BadKey says 400 or 413 (nil in
		// a dry run: the request goes on unguarded).
		id, err := key(c.Request)
		if err != nil {
			if rej := g.BadKey(err); rej != nil {
				reject(c, rej)
				c.Abort()
			}
			return
		}
		// 2. The decision. BeginReplay is Begin for every mode but
		// Replay, which also compares request bodies.
		var fingerprint string
		if replay {
			if fingerprint, err = keyfuncs.IdempotencyFingerprint(c.Request); err != nil {
				if rej := g.BadKey(err); rej != nil {
					reject(c, rej)
					c.Abort()
				}
				return
			}
		}
		parent := c.Request.Context()
		ctx, ticket, rej := g.BeginReplay(parent, id, fingerprint)
		switch {
		case rej == nil:
		case rej.Replay != nil: // the first request's answer, as it was
			rej.Replay.Write(miniWriter{c})
			c.Abort()
			return
		default:
			reject(c, rej)
			c.Abort()
			return
		}
		// 3. The RateLimit headers, then the rest of the chain, under the
		// context Begin returned, reporting the status the client gets;
		// the first request of a Replay key hands its response to the
		// capture, which mini has whole once the chain returned.
		// 4. No recover.
		ticket.SetHeaders(c.Header)
		if ctx != parent {
			c.Request = c.Request.WithContext(ctx)
		}
		ticket.Run(ctx, func() int {
			c.Next()
			if c.Status == 0 {
				c.Status = http.StatusOK
			}
			capture := ticket.Capture()
			capture.WriteHeader(c.Header, c.Status)
			capture.Write(c.Body.Bytes())
			return c.Status
		})
	}
}

// writeProblem answers rej exactly as the other adapters do: guard.Write
// through a ResponseWriter over the framework's context. (Log rej.Err here
// if you like; never send it.)
func writeProblem(c *miniCtx, rej *guard.Rejection) {
	guard.Write(miniWriter{c}, rej)
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

// An adapter for another framework is the four steps of the package
// documentation in that framework's idioms. The same user's second
// submission within the 5 s window is turned away, and a request without a
// user is never throttled under a shared key.
func Example() {
	limiter, err := throttle.New(memstore.New(), throttle.Policy{Name: "submit"})
	if err != nil {
		panic(err)
	}
	app := []miniHandler{
		throttleMini(limiter, keyfuncs.Header("X-User-ID"), writeProblem),
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
