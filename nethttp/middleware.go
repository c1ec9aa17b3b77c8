package nethttp

import (
	"cmp"
	"net/http"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle/flow"
	"github.com/go-throttle/throttle/throttle/guard"
)

// Middleware returns middleware that decides each request with g under the
// identity key builds. The handler runs with the lease in its context
// (throttle.LeaseFrom) when the mode needs one; an Exclusive context is
// cancelled with throttle.ErrLost if the lease is lost. A panic ends the
// hold as a failure and keeps unwinding. It panics when g or key is nil.
func Middleware(g *guard.Guard, key keyfuncs.Func, opts ...Option) func(http.Handler) http.Handler {
	if g == nil || key == nil {
		panic("nethttp: Middleware needs a non-nil Guard and key function")
	}
	h := handler{g: g, key: key}
	for _, o := range opts {
		o(&h)
	}
	return func(next http.Handler) http.Handler {
		if next == nil {
			panic("nethttp: Middleware wraps a nil handler")
		}
		h := h
		h.next = next
		return &h
	}
}

// Option configures Middleware.
type Option func(*handler)

// WithRejectHandler answers rejected requests with h instead of the
// default problem+json, for services with their own error format. h must
// write the whole response; the Retry-After and RateLimit fields are set
// already, and rej.RetryAfter and rej.Limits say the same (for a page
// that says "try again in N s"). A replayed response never reaches h.
func WithRejectHandler(h func(w http.ResponseWriter, r *http.Request, rej *guard.Rejection)) Option {
	return func(m *handler) { m.reject = h }
}

type handler struct {
	g      *guard.Guard
	key    keyfuncs.Func
	next   http.Handler
	reject func(http.ResponseWriter, *http.Request, *guard.Rejection) // nil: the default
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, err := h.key(r)
	var rej guard.Rejection
	if h.g.Serve(w, r, flow.Call{Route: r.Pattern, ID: id, Err: err}, &rej, func(r *http.Request, c *guard.Capture) int {
		rec := recorders.Get().(*recorder)
		*rec = recorder{ResponseWriter: w, capture: c}
		h.next.ServeHTTP(rec, r)
		status := cmp.Or(rec.status, http.StatusOK) // 200 when nothing was sent
		*rec = recorder{}                           // keeps nothing alive
		recorders.Put(rec)
		return status
	}) {
		return
	}
	if h.reject == nil || rej.Reason == guard.ReasonReplayed {
		rej.Write(w)
		return
	}
	h.rejected(w, r, rej)
}

// rejected hands rej, with its header fields set, to the reject handler.
func (h *handler) rejected(w http.ResponseWriter, r *http.Request, rej guard.Rejection) {
	rej.SetHeader(w.Header())
	h.reject(w, r, &rej)
}
