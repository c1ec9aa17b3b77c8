package nethttp

import (
	"context"
	"net/http"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
)

// Middleware returns middleware that admits each request under l, keyed by
// the identity key builds from it (combined with the policy name by
// l.Key). It is the one-line way to guard a handler; see the package
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
// Middleware panics when l or key is nil: that is a wiring mistake to catch
// at start-up, not something a request can cause.
func Middleware(l *throttle.Limiter, key keyfuncs.Func, opts ...Option) func(http.Handler) http.Handler {
	if l == nil || key == nil {
		panic("nethttp: Middleware needs a non-nil Limiter and key function")
	}
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	writes := cfg.reject == nil // the guard answers duplicates itself
	if writes {
		cfg.reject = defaultReject
	}
	g := guard.New(l, cfg.guard...)
	cfg.cost, cfg.fingerprint = g.Inputs(cfg.cost, cfg.fingerprint)
	return func(next http.Handler) http.Handler {
		if next == nil {
			panic("nethttp: Middleware wraps a nil handler")
		}
		return &handler{g: g, key: key, cost: cfg.cost, fingerprint: cfg.fingerprint, next: next,
			reject: cfg.reject, writes: writes}
	}
}

type handler struct {
	g           *guard.Guard
	key         keyfuncs.Func
	cost        func(*http.Request) (int, error)
	fingerprint func(*http.Request) (string, error)
	next        http.Handler
	reject      RejectHandler
	writes      bool // reject is defaultReject: see guard.BeginOrWrite
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, err := h.key(r)
	if err != nil {
		h.unguarded(w, r, h.g.BadKey(err))
		return
	}
	cost := 1
	if h.cost != nil {
		if cost, err = h.cost(r); err != nil {
			h.unguarded(w, r, h.g.BadCost(err))
			return
		}
	}
	parent := r.Context()
	var (
		ctx    context.Context
		ticket guard.Ticket
		rej    *guard.Rejection
	)
	if h.fingerprint != nil {
		fp, err := h.fingerprint(r)
		if err != nil {
			h.unguarded(w, r, h.g.BadKey(err))
			return
		}
		ctx, ticket, rej = h.g.BeginReplay(parent, id, fp)
	} else {
		var out http.ResponseWriter // nil: every rejection goes to h.reject
		if h.writes {
			out = w
		}
		var written bool
		if ctx, ticket, rej, written = h.g.BeginOrWrite(parent, id, cost, out); written {
			return
		}
	}
	switch {
	case rej == nil:
	case rej.Replay != nil:
		rej.Replay.Write(w)
		return
	default:
		h.reject(w, r, rej)
		return
	}
	if ctx != parent {
		r = r.WithContext(ctx)
	}
	ticket.SetHeaders(w.Header())
	rec := newRecorder(w, ticket.Capture())
	ticket.Run(ctx, func() int {
		h.next.ServeHTTP(rec, r)
		status := rec.result()
		// A handler that wrote nothing: its header goes out now.
		rec.capture.WriteHeader(w.Header(), status)
		return status
	})
	// Not reached when the handler panicked: that recorder is left to
	// the garbage collector.
	rec.free()
}

// unguarded answers a request whose key or cost could not be built with
// rej, or, under a dry run (rej nil), lets it through unguarded.
func (h *handler) unguarded(w http.ResponseWriter, r *http.Request, rej *guard.Rejection) {
	if rej != nil {
		h.reject(w, r, rej)
		return
	}
	h.next.ServeHTTP(w, r)
}
