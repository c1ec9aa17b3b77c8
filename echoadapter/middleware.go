package echoadapter

import (
	"bufio"
	"cmp"
	"net"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle/flow"
	"github.com/go-throttle/throttle/throttle/guard"
)

// Middleware returns echo middleware that decides each request with g
// under the identity key builds: a keyfuncs.Func, or a function of the
// echo.Context for echo's own sources (RealIP, Value, Path). The handler
// runs with c.Request() carrying the lease (throttle.LeaseFrom) when the
// mode needs one. It panics when g or key is nil.
func Middleware[K keyfuncs.Func | func(*http.Request) (string, error) | func(echo.Context) (string, error)](
	g *guard.Guard, key K, opts ...Option) echo.MiddlewareFunc {
	if g == nil || key == nil {
		panic("echoadapter: Middleware needs a non-nil Guard and key function")
	}
	m := &middleware{g: g}
	switch k := any(key).(type) {
	case keyfuncs.Func:
		m.key = Request(k)
	case func(*http.Request) (string, error):
		m.key = Request(k)
	case func(echo.Context) (string, error):
		m.key = k
	}
	for _, o := range opts {
		o(m)
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error { return m.serve(c, next) }
	}
}

// Option configures Middleware.
type Option func(*middleware)

// WithRejectHandler answers rejected requests with h instead of the
// default problem+json. h writes the response and returns nil, or returns
// an error for the application's HTTPErrorHandler, such as
// echo.NewHTTPError(rej.Status, rej.Detail); the Retry-After and RateLimit
// fields are set already, and rej.RetryAfter and rej.Limits say the same.
// A replayed response never reaches h.
func WithRejectHandler(h func(c echo.Context, rej *guard.Rejection) error) Option {
	return func(m *middleware) { m.reject = h }
}

// WithSkipper lets requests for which skip returns true through unguarded,
// as echo's middleware.Skipper does.
func WithSkipper(skip func(c echo.Context) bool) Option {
	return func(m *middleware) { m.skip = skip }
}

type middleware struct {
	g      *guard.Guard
	key    func(echo.Context) (string, error)
	skip   func(echo.Context) bool
	reject func(echo.Context, *guard.Rejection) error
}

func (m *middleware) serve(c echo.Context, next echo.HandlerFunc) error {
	if m.skip != nil && m.skip(c) {
		return next(c)
	}
	id, err := m.key(c)
	var herr error // the handler's
	var rej guard.Rejection
	if m.g.Serve(c.Response(), c.Request(), flow.Call{Route: c.Path(), ID: id, Err: err}, &rej,
		func(r *http.Request, capture *guard.Capture) int {
			herr = run(c, next, r, capture)
			return status(c, herr)
		}) {
		return herr
	}
	if m.reject == nil || rej.Reason == guard.ReasonReplayed {
		rej.Write(c.Response())
		return nil
	}
	return m.rejected(c, rej)
}

// rejected hands rej, with its header fields set, to the reject handler.
func (m *middleware) rejected(c echo.Context, rej guard.Rejection) error {
	rej.SetHeader(c.Response().Header())
	return m.reject(c, &rej)
}

func run(c echo.Context, next echo.HandlerFunc, r *http.Request, capture *guard.Capture) error {
	c.SetRequest(r)
	if capture != nil {
		res := c.Response()
		w := res.Writer
		res.Writer = &captureWriter{ResponseWriter: w, capture: capture}
		defer func() { res.Writer = w }()
	}
	return next(c)
}

// status is the status the client gets for a handler that returned err.
func status(c echo.Context, err error) int {
	res := c.Response()
	if res.Committed || err == nil {
		return cmp.Or(res.Status, http.StatusOK)
	}
	he, ok := err.(*echo.HTTPError) // as echo's DefaultHTTPErrorHandler
	if !ok {
		return http.StatusInternalServerError
	}
	if inner, ok := he.Internal.(*echo.HTTPError); ok {
		he = inner
	}
	return cmp.Or(he.Code, http.StatusInternalServerError)
}

// captureWriter is the echo.Response's Writer while a Replay key's first
// request runs; echo sends the header in WriteHeader.
type captureWriter struct {
	http.ResponseWriter
	capture *guard.Capture
}

func (w *captureWriter) WriteHeader(code int) {
	w.capture.WriteHeader(w.Header(), code)
	w.ResponseWriter.WriteHeader(code)
}

func (w *captureWriter) Write(b []byte) (int, error) {
	w.capture.Write(b)
	return w.ResponseWriter.Write(b)
}

func (w *captureWriter) Flush() { _ = w.FlushError() }

func (w *captureWriter) FlushError() error {
	w.capture.Abandon()
	return http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *captureWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.capture.Abandon()
	}
	return conn, rw, err
}

func (w *captureWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
