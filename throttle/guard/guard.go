package guard

import (
	"context"
	"errors"
	"net/http"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/internal/admit"
)

// Guard is one Limiter's request handling, minus the framework. Make one
// per middleware, when the middleware is built: it works out once what
// every admitted response repeats (the RateLimit-Policy field, and the
// RateLimit field of a lock's holder), so that a request pays only for
// what is its own. It is safe for concurrent use.
type Guard struct {
	l *throttle.Limiter
	p throttle.Policy
	// path admits and releases the lock modes' requests, without a lease
	// where the Limiter can (see package admit).
	path admit.Path[throttle.Lease]

	// policyField is the RateLimit-Policy value, the same on every
	// response.
	policyField []string
	// heldField is the RateLimit value of a request that holds its key
	// (Dedupe, Cooldown, Exclusive, Replay): nothing more is available to
	// it while it does.
	heldField []string
	// rc is what a Replay policy records (WithRecording).
	rc recording

	// contendedBody is the problem body of a request turned away for its
	// key or quota (RejectStatus, ReasonContended), and rejectedFields the
	// RateLimit values of such rejections by their t: see cache.go.
	contendedBody  []byte
	rejectedFields *fieldCache
	// quotaFields caches the RateLimit values of a Quota policy's
	// decisions (nil for other modes): see cache.go.
	quotaFields *quotaFields
	// cost and fingerprint are the policy's per-request functions, nil
	// when it uses none (see inputs).
	cost        func(*http.Request) (int, error)
	fingerprint func(*http.Request) (string, error)
}

// New returns the Guard of l, configured by opts. It panics when l is nil:
// a wiring mistake to catch at start-up.
func New(l *throttle.Limiter, opts ...Option) *Guard {
	if l == nil {
		panic("guard: New needs a non-nil Limiter")
	}
	g := &Guard{l: l, p: l.Policy(), rc: newRecording(Recording{})}
	g.path = admit.For.(func(*throttle.Limiter) admit.Path[throttle.Lease])(l)
	for _, o := range opts {
		o(g)
	}
	g.inputs()
	g.policyField = []string{policyField(&g.p)}
	t := int64(-1) // no "t" for Exclusive: the hold lasts as long as the work
	if g.p.Mode != throttle.Exclusive {
		t = seconds(g.p.Window)
	}
	g.heldField = []string{limitField(g.p.Name, 0, t)}
	g.contendedBody = buildBody(&Rejection{Status: g.p.RejectStatus, Reason: ReasonContended, Policy: &g.p})
	name := g.p.Name
	g.rejectedFields = newFieldCache(cachedLimitSeconds+1, func(t int64) string { return limitField(name, 0, t) })
	if g.p.Mode == throttle.Quota {
		g.quotaFields = newQuotaFields(&g.p)
	}
	return g
}

// quotaField returns the RateLimit value of the Quota decision d.
func (g *Guard) quotaField(d *throttle.Decision) []string {
	return g.quotaFields.get(d.Remaining, refillSeconds(&g.p, d))
}

// begin decides a request whose identity is id, whose cost (under a
// Quota) is cost and whose body (under a Replay) has fingerprint. When the
// request goes ahead, it returns the context the handler must run with
// (ctx itself unless the policy puts the lease in it: Exclusive, Fence or
// Reentrant; an Exclusive context is cancelled, with cause
// throttle.ErrLost, if the lease is lost) and the ticket that ends its hold.
// Otherwise it returns the rejection to answer with, except that a request
// turned away because its key is held or its quota spent, the commonest
// rejection by far, is answered on w when w is not nil, without allocating
// the Rejection, and begin reports written. A request let through because
// the store failed open gets a ticket that holds nothing.
func (g *Guard) begin(ctx context.Context, id string, cost int, fingerprint string, w http.ResponseWriter) (_ context.Context, _ ticket, _ *Rejection, written bool) {
	switch g.p.Mode {
	case throttle.Quota:
		return g.beginQuota(ctx, id, cost, w)
	case throttle.Replay:
		ctx, t, rej := g.beginReplay(ctx, id, fingerprint)
		return ctx, t, rej, false
	}
	lease, hold, err := g.path.Admit(ctx, id)
	if err != nil {
		if ce, ok := err.(*throttle.ContendedError); ok && w != nil && !g.p.DryRun {
			g.writeContended(w, err, ce, nil)
			return ctx, ticket{}, nil, true
		}
		ctx, t, rej := g.reject(ctx, g.rejection(err))
		return ctx, t, rej, false
	}
	t := ticket{g: g, lease: lease, hold: hold}
	if lease == nil {
		return ctx, t, nil, false
	}
	switch {
	case g.p.Mode == throttle.Exclusive:
		ctx, t.stop = lease.KeepAlive(ctx)
	case g.p.Fence || g.p.Reentrant:
		ctx = throttle.WithLease(ctx, lease)
	}
	return ctx, t, nil, false
}

// beginQuota is begin for a Quota policy.
func (g *Guard) beginQuota(ctx context.Context, id string, cost int, w http.ResponseWriter) (context.Context, ticket, *Rejection, bool) {
	if cost < 0 || cost > g.p.Burst {
		g.observe(ctx, throttle.Event{Kind: throttle.KeyError})
		status := http.StatusBadRequest
		if cost > 0 {
			status = http.StatusRequestEntityTooLarge
		}
		return ctx, ticket{}, g.newRejection(status, ReasonBadCost, throttle.ErrInvalid), false
	}
	d, err := g.l.AdmitN(ctx, id, cost)
	if err != nil {
		if ce, ok := err.(*throttle.ContendedError); ok && w != nil && !g.p.DryRun {
			g.writeContended(w, err, ce, d)
			return ctx, ticket{}, nil, true
		}
		rej := g.rejection(err)
		if d != nil {
			// A copy: d itself stays on the stack (AdmitN is inlined).
			dc := *d
			rej.Decision = &dc
		}
		ctx, t, rej := g.reject(ctx, rej)
		return ctx, t, rej, false
	}
	t := ticket{g: g}
	if d != nil {
		t.quota, t.hasQuota = *d, true
		if g.p.CountOnlyFailures {
			t.id, t.refund = id, cost
		}
	}
	return ctx, t, nil, false
}

// badInput answers a request whose identity or cost could not be worked
// out (the adapter's key function or the cost or fingerprint function
// failed) for reason: 400, or the 4xx status the error carries through an
// HTTPStatus method (a *keyfuncs.Error says 413 for a body too long to
// hash); any other status is ignored, since the request, not the server, is
// at fault. Such a request is never put under a key shared with others,
// and the store is not asked. Under Policy.DryRun it returns nil: the
// request goes ahead, unguarded, and is only counted.
func (g *Guard) badInput(err error, reason Reason) *Rejection {
	g.observe(context.Background(), throttle.Event{Kind: throttle.KeyError})
	if g.p.DryRun {
		return nil
	}
	return g.newRejection(clientStatus(err), reason, err)
}

// reject returns rej as begin's answer, except under Policy.DryRun, where
// the request goes ahead with a ticket that holds nothing but, when it was
// turned away for its key or quota (which the Limiter observed as
// DryRunRejected), the rejection's RateLimit fields. A request whose client
// left is answered as ever: nobody is waiting for it.
func (g *Guard) reject(ctx context.Context, rej *Rejection) (context.Context, ticket, *Rejection) {
	if g.p.DryRun && rej.Reason != ReasonCanceled {
		t := ticket{g: g}
		if rej.Reason == ReasonContended {
			t.dryRun = rej
		}
		return ctx, t, nil
	}
	return ctx, ticket{}, rej
}

// clientStatus returns the status of a request that is at fault: 400, or
// the 4xx status err carries through an HTTPStatus method.
func clientStatus(err error) int {
	var hs interface{ HTTPStatus() int }
	if errors.As(err, &hs) {
		if s := hs.HTTPStatus(); s >= 400 && s < 500 {
			return s
		}
	}
	return http.StatusBadRequest
}

// observe tells the policy's Observer, if any, of e: the events only the
// guard sees (key errors, releases with their reason).
func (g *Guard) observe(ctx context.Context, e throttle.Event) {
	if g.p.Observer != nil {
		e.Policy, e.Mode = g.p.Name, g.p.Mode
		g.p.Observer.Observe(ctx, e)
	}
}
