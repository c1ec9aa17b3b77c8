package ginadapter

import (
	"bufio"
	"net"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle/flow"
	"github.com/go-throttle/throttle/throttle/guard"
)

// Middleware returns gin middleware that decides each request with g under
// the identity key builds: a keyfuncs.Func, or a function of the
// *gin.Context for gin's own sources (ClientIP, Value, FullPath). The chain
// runs with c.Request carrying the lease (throttle.LeaseFrom) when the mode
// needs one. It panics when g or key is nil.
func Middleware[K keyfuncs.Func | func(*http.Request) (string, error) | func(*gin.Context) (string, error)](
	g *guard.Guard, key K, opts ...Option) gin.HandlerFunc {
	if g == nil || key == nil {
		panic("ginadapter: Middleware needs a non-nil Guard and key function")
	}
	var m middleware
	switch k := any(key).(type) {
	case keyfuncs.Func:
		m.key = Request(k)
	case func(*http.Request) (string, error):
		m.key = Request(k)
	case func(*gin.Context) (string, error):
		m.key = k
	}
	for _, o := range opts {
		o(&m)
	}
	return func(c *gin.Context) {
		id, err := m.key(c)
		var rej guard.Rejection
		if g.Serve(c.Writer, c.Request, flow.Call{Route: c.FullPath(), ID: id, Err: err}, &rej,
			func(r *http.Request, capture *guard.Capture) int { return next(c, r, capture) }) {
			return
		}
		if m.reject == nil || rej.Reason == guard.ReasonReplayed {
			rej.Write(c.Writer)
		} else {
			m.rejected(c, rej)
		}
		c.Abort()
	}
}

// Option configures Middleware.
type Option func(*middleware)

// WithRejectHandler answers rejected requests with h, in the gin idiom
// (c.AbortWithStatusJSON), instead of the default problem+json; the
// Retry-After and RateLimit fields are set already (rej.RetryAfter and
// rej.Limits say the same), and the chain is aborted after h. A replayed
// response never reaches h.
func WithRejectHandler(h func(c *gin.Context, rej *guard.Rejection)) Option {
	return func(m *middleware) { m.reject = h }
}

// rejected hands rej, with its header fields set, to the reject handler.
func (m *middleware) rejected(c *gin.Context, rej guard.Rejection) {
	rej.SetHeader(c.Writer.Header())
	m.reject(c, &rej)
}

type middleware struct {
	key    func(*gin.Context) (string, error)
	reject func(*gin.Context, *guard.Rejection)
}

// next runs the rest of the chain with r and returns the client's status.
func next(c *gin.Context, r *http.Request, capture *guard.Capture) int {
	c.Request = r
	if capture != nil {
		w := c.Writer
		c.Writer = &captureWriter{ResponseWriter: w, capture: capture}
		defer func() { c.Writer = w }()
	}
	c.Next()
	// An unwritten response with c.Errors is a failure an error middleware
	// upstream answers: 500 unless an error status was set.
	s := c.Writer.Status()
	if len(c.Errors) == 0 || c.Writer.Written() || s >= http.StatusBadRequest {
		return s
	}
	return http.StatusInternalServerError
}

// captureWriter is c.Writer while a Replay key's first request runs. gin
// sends the header lazily, so it is captured at the first body write, or
// when the chain returns without one.
type captureWriter struct {
	gin.ResponseWriter
	capture *guard.Capture
}

func (w *captureWriter) sent() { w.capture.WriteHeader(w.Header(), w.Status()) }

func (w *captureWriter) Write(b []byte) (int, error) {
	w.sent()
	w.capture.Write(b)
	return w.ResponseWriter.Write(b)
}

func (w *captureWriter) WriteString(s string) (int, error) { return w.Write([]byte(s)) }

func (w *captureWriter) WriteHeaderNow() {
	w.sent()
	w.ResponseWriter.WriteHeaderNow()
}

func (w *captureWriter) Flush() {
	w.capture.Abandon()
	w.ResponseWriter.Flush()
}

func (w *captureWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := w.ResponseWriter.Hijack()
	if err == nil {
		w.capture.Abandon()
	}
	return conn, rw, err
}
