package echoadapter

import (
	"net/http"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle/guard"
)

// Middleware returns echo middleware that decides each request with g,
// keyed by the identity key builds from c.Request(). Because keyfuncs work
// on the *http.Request, the stored key is the one the nethttp and gin
// adapters build for the same request.
//
// The handler runs with c.Request() carrying the lease
// (throttle.LeaseFrom(c.Request().Context())) when the policy is Exclusive,
// Fence or Reentrant. When it returns, the hold ends with the status the
// client gets, a returned error counting as echo will render it: see
// "Status of the handler" in the package documentation. Middleware panics
// when g or key is nil: a wiring mistake to catch at start-up.
func Middleware(g *guard.Guard, key keyfuncs.Func, opts ...Option) echo.MiddlewareFunc {
	if key == nil {
		panic("echoadapter: Middleware needs a non-nil key function")
	}
	return newMiddleware(g, nil, key, opts)
}

// ContextMiddleware is Middleware with a key built from the echo.Context,
// for echo's own identity sources (RealIP(e), Value, Path). See the package
// documentation for what echo trusts when it computes RealIP.
func ContextMiddleware(g *guard.Guard, key KeyFunc, opts ...Option) echo.MiddlewareFunc {
	if key == nil {
		panic("echoadapter: ContextMiddleware needs a non-nil key function")
	}
	return newMiddleware(g, key, nil, opts)
}

// newMiddleware is Middleware (key nil) and ContextMiddleware (reqKey nil).
func newMiddleware(g *guard.Guard, key KeyFunc, reqKey keyfuncs.Func, opts []Option) echo.MiddlewareFunc {
	if g == nil {
		panic("echoadapter: middleware needs a non-nil Guard")
	}
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	m := &middleware{g: g, key: key, reqKey: reqKey, skip: cfg.skip, reject: cfg.reject}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error { return m.serve(c, next) }
	}
}

// middleware is one ContextMiddleware: its guard and options.
type middleware struct {
	g      *guard.Guard
	key    KeyFunc       // nil when reqKey is set
	reqKey keyfuncs.Func // called without a Request adapter around it
	skip   func(c echo.Context) bool
	reject RejectHandler // nil: the guard writes its default answers
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
	x := exchanges.Get().(*exchange)
	x.c, x.next = c, next
	_, rej := m.g.Serve(x, id, err, m.reject == nil)
	err = x.err
	*x = exchange{}
	exchanges.Put(x)
	if rej != nil {
		return m.reject(c, rej)
	}
	return err
}

// exchanges recycles exchanges, one per request, which a pooled one spares
// an allocation. An exchange goes back once its handler has returned, as
// echo's contexts do.
var exchanges = sync.Pool{New: func() any { return new(exchange) }}

// exchange is one request, as the guard sees it, and the error its handler
// returned.
type exchange struct {
	c    echo.Context
	next echo.HandlerFunc
	err  error
}

// Request returns the request, for the guard.
func (x *exchange) Request() *http.Request { return x.c.Request() }

// Writer returns c.Response(), which the guard answers rejections on.
func (x *exchange) Writer() http.ResponseWriter { return x.c.Response() }

// Next runs the handler with r, its response fed to capture, and returns
// the status the client gets.
func (x *exchange) Next(r *http.Request, capture *guard.Capture) int {
	c := x.c
	if r != c.Request() {
		c.SetRequest(r)
	}
	if capture != nil {
		res := c.Response()
		w := res.Writer
		res.Writer = &captureWriter{ResponseWriter: w, capture: capture}
		defer func() { res.Writer = w }()
	}
	x.err = x.next(c)
	return status(c, x.err)
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
