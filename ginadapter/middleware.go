package ginadapter

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle/guard"
)

// Middleware returns gin middleware that decides each request with g, keyed
// by the identity key builds from c.Request. Because keyfuncs work on the
// *http.Request, the stored key is the one the nethttp and echo adapters
// build for the same request.
//
// The rest of the chain runs with c.Request carrying the lease
// (throttle.LeaseFrom(c.Request.Context())) when the policy is Exclusive,
// Fence or Reentrant. When it returns, the hold ends with the status the
// client gets, an error left in c.Errors with no response written counting
// as a failure: see "Status of the handler" in the package documentation.
// Middleware panics when g or key is nil: a wiring mistake to catch at
// start-up.
func Middleware(g *guard.Guard, key keyfuncs.Func, opts ...Option) gin.HandlerFunc {
	if key == nil {
		panic("ginadapter: Middleware needs a non-nil key function")
	}
	return newMiddleware(g, nil, key, opts)
}

// ContextMiddleware is Middleware with a key built from the *gin.Context,
// for gin's own identity sources (ClientIP(e), Value, FullPath). See the
// package documentation for what gin trusts when it computes ClientIP.
func ContextMiddleware(g *guard.Guard, key KeyFunc, opts ...Option) gin.HandlerFunc {
	if key == nil {
		panic("ginadapter: ContextMiddleware needs a non-nil key function")
	}
	return newMiddleware(g, key, nil, opts)
}

// newMiddleware is Middleware (key nil) and ContextMiddleware (reqKey nil).
func newMiddleware(g *guard.Guard, key KeyFunc, reqKey keyfuncs.Func, opts []Option) gin.HandlerFunc {
	if g == nil {
		panic("ginadapter: middleware needs a non-nil Guard")
	}
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	reject := cfg.reject
	return func(c *gin.Context) {
		var id string
		var err error
		if reqKey != nil {
			id, err = reqKey(c.Request)
		} else {
			id, err = key(c)
		}
		ran, rej := g.Serve(exchange{c}, id, err, reject == nil)
		if rej != nil {
			reject(c, rej)
		}
		if !ran {
			c.Abort()
		}
	}
}

// exchange is a *gin.Context seen as the request's guard.Exchange (a
// struct of one pointer, which an interface holds without an allocation).
type exchange struct{ c *gin.Context }

// Request returns the request, for the guard.
func (x exchange) Request() *http.Request { return x.c.Request }

// Writer returns c.Writer, which the guard answers rejections on.
func (x exchange) Writer() http.ResponseWriter { return x.c.Writer }

// Next runs the rest of the chain with r, its response fed to capture, and
// returns the status the client gets.
func (x exchange) Next(r *http.Request, capture *guard.Capture) int {
	c := x.c
	c.Request = r
	if capture != nil {
		w := c.Writer
		c.Writer = &captureWriter{ResponseWriter: w, capture: capture}
		defer func() { c.Writer = w }()
	}
	c.Next()
	return status(c)
}

// status is the status the client gets, or will get, for the chain that has
// just returned: see "Status of the handler" in the package documentation.
// A response whose header has been written keeps its status. One not yet
// written, while c.Errors holds an error, is a failure: the status set, if
// it is an error status (c.Status(409) before c.Error), otherwise 500, for
// that is what an error-rendering middleware upstream will answer (and
// gin.Error carries no status of its own).
func status(c *gin.Context) int {
	s := c.Writer.Status()
	if len(c.Errors) == 0 || c.Writer.Written() || s >= http.StatusBadRequest {
		return s
	}
	return http.StatusInternalServerError
}
