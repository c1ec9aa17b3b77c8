package guard

import (
	"net/http"

	"github.com/go-throttle/throttle/throttle"
)

// Exchange is one request as an adapter hands it to Serve: the few things
// that differ between frameworks. Everything else (the decision, the
// headers, the answers, the end of the hold) is Serve's.
type Exchange interface {
	// Request returns the request being decided.
	Request() *http.Request
	// Writer returns the response writer that rejections and replayed
	// answers are written to, and whose header the RateLimit fields go
	// in.
	Writer() http.ResponseWriter
	// Next runs the rest of the chain (the handler) with r, which carries
	// the context the hold needs, and returns the status the client got:
	// 200 when nothing was written. When c is not nil, the first request of
	// a Replay key is being recorded: feed c the response as it is sent
	// (Capture.WriteHeader when the status goes out, every body write,
	// Abandon on a flush or a hijack). A framework that collects the
	// response before sending it may feed c once the chain returned.
	Next(r *http.Request, c *Capture) (status int)
}

// Serve decides one request and, when it goes ahead, runs it. id and keyErr
// are what the adapter's key function made of the request: the request's
// identity, or why none could be built (answered 400, or the 4xx the error
// carries, such as 413 for a body too long to hash; never a shared key).
//
// A request that goes ahead gets the RateLimit fields on its response and
// runs through x.Next; its hold ends when Next returns or panics, as the
// policy's mode says (a panic keeps unwinding, after the release). A
// request turned away never reaches Next: when write is true, Serve answers
// it with Write, as every adapter does by default; when write is false,
// Serve returns the Rejection for the adapter's own handler to answer in the
// framework's idiom. A Replay duplicate is always answered here, with the
// recorded response. ran reports whether Next ran, so that an adapter whose
// framework needs it can abort the rest of its chain.
func (g *Guard) Serve(x Exchange, id string, keyErr error, write bool) (ran bool, rej *Rejection) {
	r := x.Request()
	if keyErr != nil {
		return g.unguarded(x, r, g.badInput(keyErr, ReasonBadKey), write)
	}
	cost, fingerprint := 1, ""
	var err error
	if g.cost != nil {
		if cost, err = g.cost(r); err != nil {
			return g.unguarded(x, r, g.badInput(err, ReasonBadCost), write)
		}
	}
	if g.fingerprint != nil {
		if fingerprint, err = g.fingerprint(r); err != nil {
			return g.unguarded(x, r, g.badInput(err, ReasonBadKey), write)
		}
	}
	parent := r.Context()
	w := x.Writer()
	out := w
	if !write {
		out = nil
	}
	ctx, t, rej, written := g.begin(parent, id, cost, fingerprint, out)
	switch {
	case written:
		return false, nil
	case rej != nil && rej.Replay != nil:
		rej.Replay.Write(w)
		return false, nil
	case rej != nil:
		return false, g.answer(w, rej, write)
	}
	if ctx != parent {
		r = r.WithContext(ctx)
	}
	t.setHeaders(w.Header())
	t.run(ctx, func() int {
		status := x.Next(r, t.capture)
		t.capture.WriteHeader(w.Header(), status) // nothing written: the header goes out now
		return status
	})
	return true, nil
}

// unguarded answers rej, a request whose identity or cost could not be
// worked out, or, under a dry run (rej nil), runs it with no hold.
func (g *Guard) unguarded(x Exchange, r *http.Request, rej *Rejection, write bool) (bool, *Rejection) {
	if rej != nil {
		return false, g.answer(x.Writer(), rej, write)
	}
	x.Next(r, nil)
	return true, nil
}

// answer writes rej on w when write is set, and returns it for the
// adapter's own handler otherwise.
func (g *Guard) answer(w http.ResponseWriter, rej *Rejection, write bool) *Rejection {
	if write {
		Write(w, rej)
		return nil
	}
	return rej
}

// WithCost makes a Quota policy charge each request what f says instead of
// 1: the bytes of an upload, the items of a batch. A cost above the policy's
// Burst gets 413 (it could never be allowed), a negative one 400, and an
// error of f 400 or the 4xx status it carries. Other modes ignore it: a
// request holds its key or not.
func WithCost(f func(r *http.Request) (int, error)) Option {
	return func(g *Guard) { g.cost = f }
}

// WithFingerprint sets how a Replay policy fingerprints a request's body,
// so that a key reused with another body gets 422 instead of the first
// answer. Default: under an Idempotency-Key, the SHA-256 of the body (read
// and restored). Other modes ignore it.
func WithFingerprint(f func(r *http.Request) (string, error)) Option {
	return func(g *Guard) { g.fingerprint = f }
}

// inputs drops the per-request functions the policy does not use, so that
// Serve calls only those: a cost only under a Quota, a fingerprint only under
// a Replay (idempotencyFingerprint when none was set).
func (g *Guard) inputs() {
	if g.p.mode != throttle.ModeQuota {
		g.cost = nil
	}
	switch {
	case g.p.mode != throttle.ModeReplay:
		g.fingerprint = nil
	case g.fingerprint == nil:
		g.fingerprint = idempotencyFingerprint
	}
}
