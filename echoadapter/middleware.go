package echoadapter

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
)

// Middleware returns echo middleware that admits each request under l,
// keyed by the identity key builds from c.Request(). Because keyfuncs work
// on the *http.Request, the stored key is the one the nethttp and gin
// adapters build for the same request.
//
// The handler runs with c.Request() carrying the lease
// (throttle.LeaseFrom(c.Request().Context())) when the policy is Exclusive,
// Fence or Reentrant. When it returns, the hold ends with the status the
// client gets, a returned error counting as echo will render it: see
// "Status of the handler" in the package documentation. Middleware panics
// when l or key is nil: a wiring mistake to catch at start-up.
func Middleware(l *throttle.Limiter, key keyfuncs.Func, opts ...Option) echo.MiddlewareFunc {
	if key == nil {
		panic("echoadapter: Middleware needs a non-nil key function")
	}
	return newMiddleware(l, nil, key, opts)
}

// ContextMiddleware is Middleware with a key built from the echo.Context,
// for echo's own identity sources (RealIP(e), Value, Path). See the package
// documentation for what echo trusts when it computes RealIP.
func ContextMiddleware(l *throttle.Limiter, key KeyFunc, opts ...Option) echo.MiddlewareFunc {
	if key == nil {
		panic("echoadapter: ContextMiddleware needs a non-nil key function")
	}
	return newMiddleware(l, key, nil, opts)
}

// newMiddleware is Middleware (key nil) and ContextMiddleware (reqKey nil).
// Middleware calls its keyfuncs.Func directly rather than through Request,
// one indirect call fewer per request.
func newMiddleware(l *throttle.Limiter, key KeyFunc, reqKey keyfuncs.Func, opts []Option) echo.MiddlewareFunc {
	if l == nil {
		panic("echoadapter: middleware needs a non-nil Limiter")
	}
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	writes := cfg.reject == nil // the guard answers duplicates itself
	if writes {
		cfg.reject = defaultReject
	}
	m := &middleware{g: guard.New(l, cfg.guard...), key: key, reqKey: reqKey, skip: cfg.skip,
		reject: cfg.reject, writes: writes}
	m.cost, m.fingerprint = m.g.Inputs(cfg.cost, cfg.fingerprint)
	// Echo applies middleware anew on every request, so this closure is
	// made per request: it captures only m and next, for a small
	// allocation with two pointers to write, as echo's own middleware do.
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error { return m.serve(c, next) }
	}
}

// middleware is one ContextMiddleware: its guard and options.
type middleware struct {
	g           *guard.Guard
	key         KeyFunc       // nil when reqKey is set
	reqKey      keyfuncs.Func // called without a Request adapter around it
	skip        func(c echo.Context) bool
	reject      RejectHandler
	writes      bool // reject is defaultReject: see guard.BeginOrWrite
	cost        func(*http.Request) (int, error)
	fingerprint func(*http.Request) (string, error)
}

// serve guards one request on its way to next.
func (m *middleware) serve(c echo.Context, next echo.HandlerFunc) error {
	if m.skip != nil && m.skip(c) {
		return next(c)
	}
	var id string
	var err error
	if m.reqKey != nil {
		id, err = m.reqKey(c.Request())
	} else {
		id, err = m.key(c)
	}
	if err != nil {
		return orNext(c, next, m.reject, m.g.BadKey(err))
	}
	r := c.Request()
	cost := 1
	if m.cost != nil {
		if cost, err = m.cost(r); err != nil {
			return orNext(c, next, m.reject, m.g.BadCost(err))
		}
	}
	parent := r.Context()
	var ctx context.Context
	var ticket guard.Ticket
	var rej *guard.Rejection
	if m.fingerprint != nil {
		fp, err := m.fingerprint(r)
		if err != nil {
			return orNext(c, next, m.reject, m.g.BadKey(err))
		}
		ctx, ticket, rej = m.g.BeginReplay(parent, id, fp)
	} else {
		var out http.ResponseWriter // nil: every rejection goes to m.reject
		if m.writes {
			out = c.Response()
		}
		var written bool
		if ctx, ticket, rej, written = m.g.BeginOrWrite(parent, id, cost, out); written {
			return nil
		}
	}
	switch {
	case rej == nil:
	case rej.Replay != nil:
		rej.Replay.Write(c.Response())
		return nil
	default:
		return m.reject(c, rej)
	}
	if ctx != parent {
		c.SetRequest(r.WithContext(ctx))
	}
	res := c.Response()
	ticket.SetHeaders(res.Header())
	capture := ticket.Capture()
	if capture != nil {
		w := res.Writer
		res.Writer = &captureWriter{ResponseWriter: w, capture: capture}
		defer func() { res.Writer = w }()
	}
	ticket.Run(ctx, func() int {
		err = next(c)
		s := status(c, err)
		capture.WriteHeader(res.Header(), s) // no body: the header goes out now
		return s
	})
	return err
}

// status is the status the client gets for a handler that returned err:
// see "Status of the handler" in the package documentation.
func status(c echo.Context, err error) int {
	res := c.Response()
	if res.Committed || err == nil {
		if res.Status == 0 {
			return http.StatusOK
		}
		return res.Status
	}
	// As echo's DefaultHTTPErrorHandler: an *echo.HTTPError itself (not
	// wrapped), or the one it carries as its Internal error.
	he, ok := err.(*echo.HTTPError)
	if !ok {
		return http.StatusInternalServerError
	}
	if inner, ok := he.Internal.(*echo.HTTPError); ok {
		he = inner
	}
	if he.Code == 0 {
		return http.StatusInternalServerError
	}
	return he.Code
}

// orNext answers with rej a request whose key or cost could not be built,
// or, under a dry run (rej nil), lets it through unguarded.
func orNext(c echo.Context, next echo.HandlerFunc, reject RejectHandler, rej *guard.Rejection) error {
	if rej != nil {
		return reject(c, rej)
	}
	return next(c)
}
