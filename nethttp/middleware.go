package nethttp

import (
	"net/http"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle/guard"
)

// Middleware returns middleware that decides each request with g, keyed by
// the identity key builds from it. It is the one-line way to guard a handler; see the package
// documentation for the responses.
//
// The handler runs with the request's context, or with one carrying the
// lease (throttle.LeaseFrom) when the policy is Exclusive, Fence or
// Reentrant; an Exclusive lease is refreshed while the handler runs and the
// context is cancelled with throttle.ErrLost if it is lost. A panic in the
// handler ends the hold as a failure (the key is released in Dedupe and
// Exclusive modes) and keeps unwinding unchanged, so that http.Server or
// your recovery middleware still sees it.
//
// Middleware panics when g or key is nil: that is a wiring mistake to catch
// at start-up, not something a request can cause.
func Middleware(g *guard.Guard, key keyfuncs.Func, opts ...Option) func(http.Handler) http.Handler {
	if g == nil || key == nil {
		panic("nethttp: Middleware needs a non-nil Guard and key function")
	}
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	return func(next http.Handler) http.Handler {
		if next == nil {
			panic("nethttp: Middleware wraps a nil handler")
		}
		return &handler{g: g, key: key, next: next, reject: cfg.reject}
	}
}

// handler is the guarded handler Middleware returns.
type handler struct {
	g      *guard.Guard
	key    keyfuncs.Func
	next   http.Handler
	reject RejectHandler // nil: the guard writes its default answers
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, err := h.key(r)
	x := newRecorder(w, r, h.next)
	_, rej := h.g.Serve((*exchange)(x), id, err, h.reject == nil)
	x.free()
	if rej != nil {
		h.reject(w, r, rej)
	}
}
