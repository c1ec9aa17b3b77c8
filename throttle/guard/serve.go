package guard

import (
	"net/http"

	"github.com/go-throttle/throttle/keyfuncs"
)

// Exchange is one request as an adapter hands it to Serve: what differs
// between frameworks.
type Exchange interface {
	// Request returns the request being decided.
	Request() *http.Request
	// Writer returns the response writer that rejections and replays are
	// written to, and whose header gets the RateLimit fields.
	Writer() http.ResponseWriter
	// Next runs the rest of the chain with r, which carries the context
	// the hold needs, and returns the status the client got (200 when
	// nothing was written). The first request of a Replay key gets a
	// non-nil c: feed it the response as it is sent (WriteHeader when the
	// status goes out, every body write, Abandon on a flush or hijack),
	// or once the chain returned if the framework buffers responses.
	Next(r *http.Request, c *Capture) (status int)
}

// Serve decides one request and, when it goes ahead, runs it through
// x.Next; id and keyErr are what the adapter's key function made of it.
// Its hold ends when Next returns or panics (the panic keeps unwinding). A
// request turned away never reaches Next: Serve answers it with
// Rejection.Write when write is true, and otherwise sets its Retry-After
// and RateLimit fields and returns it for the adapter's own handler. A
// Replay duplicate is always answered here. ran reports whether Next ran,
// for frameworks that must abort the rest of their chain.
func (g *Guard) Serve(x Exchange, id string, keyErr error, write bool) (ran bool, rej *Rejection) {
	r := x.Request()
	w := x.Writer()
	var t ticket
	cost, fp := 1, ""
	var err error
	switch {
	case keyErr != nil:
		rej = g.badInput(keyErr, ReasonBadKey)
	case g.cost != nil:
		if cost, err = g.cost(r); err != nil {
			rej = g.badInput(err, ReasonBadCost)
		}
	case g.replay != nil:
		if fp, err = keyfuncs.IdempotencyFingerprint(r); err != nil {
			rej = g.badInput(err, ReasonBadKey)
		}
	}
	parent := r.Context()
	ctx := parent
	if err == nil && keyErr == nil {
		out := w
		if !write {
			out = nil
		}
		var written bool
		if ctx, rej, written = g.begin(parent, &t, id, cost, fp, out); written {
			return false, nil
		}
	}
	switch {
	case rej != nil && rej.replay != nil:
		rej.replay.write(w)
		return false, nil
	case rej != nil && write:
		rej.Write(w)
		return false, nil
	case rej != nil:
		rej.setHeaders(w.Header())
		return false, rej
	}
	if ctx != parent {
		r = r.WithContext(ctx)
	}
	t.setHeaders(w.Header())
	t.run(ctx, func() int {
		status := x.Next(r, t.capture)
		t.capture.WriteHeader(w.Header(), status) // nothing was sent: the header goes out now
		return status
	})
	return true, nil
}
