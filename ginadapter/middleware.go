package ginadapter

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
)

// Middleware returns gin middleware that admits each request under l, keyed
// by the identity key builds from c.Request. Because keyfuncs work on the
// *http.Request, the stored key is the one the nethttp and echo adapters
// build for the same request.
//
// The rest of the chain runs with c.Request carrying the lease
// (throttle.LeaseFrom(c.Request.Context())) when the policy is Exclusive,
// Fence or Reentrant. When it returns, the hold ends with the status the
// client gets, an error left in c.Errors with no response written counting
// as a failure: see "Status of the handler" in the package documentation.
// Middleware panics when l or key is nil: a wiring mistake to catch at
// start-up.
func Middleware(l *throttle.Limiter, key keyfuncs.Func, opts ...Option) gin.HandlerFunc {
	if key == nil {
		panic("ginadapter: Middleware needs a non-nil key function")
	}
	return newMiddleware(l, nil, key, opts)
}

// ContextMiddleware is Middleware with a key built from the *gin.Context,
// for gin's own identity sources (ClientIP(e), Value, FullPath). See the
// package documentation for what gin trusts when it computes ClientIP.
func ContextMiddleware(l *throttle.Limiter, key KeyFunc, opts ...Option) gin.HandlerFunc {
	if key == nil {
		panic("ginadapter: ContextMiddleware needs a non-nil key function")
	}
	return newMiddleware(l, key, nil, opts)
}

// newMiddleware is Middleware (key nil) and ContextMiddleware (reqKey nil).
// Middleware calls its keyfuncs.Func directly rather than through Request,
// one indirect call fewer per request.
func newMiddleware(l *throttle.Limiter, key KeyFunc, reqKey keyfuncs.Func, opts []Option) gin.HandlerFunc {
	if l == nil {
		panic("ginadapter: middleware needs a non-nil Limiter")
	}
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	writes := cfg.reject == nil // the guard answers duplicates itself
	if writes {
		cfg.reject = defaultReject
	}
	g, reject := guard.New(l, cfg.guard...), cfg.reject
	costOf, fingerprint := g.Inputs(cfg.cost, cfg.fingerprint)
	return func(c *gin.Context) {
		var id string
		var err error
		if reqKey != nil {
			id, err = reqKey(c.Request)
		} else {
			id, err = key(c)
		}
		var rej *guard.Rejection
		cost, fp := 1, ""
		switch {
		case err != nil:
			rej = g.BadKey(err)
		case costOf != nil:
			if cost, err = costOf(c.Request); err != nil {
				rej = g.BadCost(err)
			}
		case fingerprint != nil:
			if fp, err = fingerprint(c.Request); err != nil {
				rej = g.BadKey(err)
			}
		}
		if err != nil {
			if rej != nil { // nil: a dry run lets the request through
				reject(c, rej)
				c.Abort()
			}
			return
		}
		parent := c.Request.Context()
		var ctx context.Context
		var ticket guard.Ticket
		if fingerprint != nil {
			ctx, ticket, rej = g.BeginReplay(parent, id, fp)
		} else {
			var out http.ResponseWriter // nil: every rejection goes to reject
			if writes {
				out = c.Writer
			}
			var written bool
			if ctx, ticket, rej, written = g.BeginOrWrite(parent, id, cost, out); written {
				c.Abort()
				return
			}
		}
		switch {
		case rej == nil:
		case rej.Replay != nil:
			rej.Replay.Write(c.Writer)
			c.Abort()
			return
		default:
			reject(c, rej)
			c.Abort()
			return
		}
		if ctx != parent {
			c.Request = c.Request.WithContext(ctx)
		}
		ticket.SetHeaders(c.Writer.Header())
		capture := ticket.Capture()
		if capture != nil {
			w := c.Writer
			c.Writer = &captureWriter{ResponseWriter: w, capture: capture}
			defer func() { c.Writer = w }()
		}
		ticket.Run(ctx, func() int {
			c.Next()
			s := status(c)
			capture.WriteHeader(c.Writer.Header(), s) // no body: the header goes out now
			return s
		})
	}
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
