package guard

import (
	"context"
	"errors"
	"net/http"

	"github.com/go-throttle/throttle/keyfuncs"
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

// Inputs returns which of an adapter's per-request functions the Guard's
// policy uses, so that an adapter calls only those: cost (a request's cost,
// WithCost) only under a Quota, which alone counts costs; fingerprint (a
// request body's fingerprint, WithFingerprint) only under a Replay, which
// alone compares bodies, keyfuncs.IdempotencyFingerprint when it is nil.
// The others come back nil.
func (g *Guard) Inputs(cost func(*http.Request) (int, error), fingerprint func(*http.Request) (string, error)) (
	func(*http.Request) (int, error), func(*http.Request) (string, error)) {
	if g.p.Mode != throttle.Quota {
		cost = nil
	}
	switch {
	case g.p.Mode != throttle.Replay:
		fingerprint = nil
	case fingerprint == nil:
		fingerprint = keyfuncs.IdempotencyFingerprint
	}
	return cost, fingerprint
}

// quotaField returns the RateLimit value of the Quota decision d.
func (g *Guard) quotaField(d *throttle.Decision) []string {
	return g.quotaFields.get(d.Remaining, refillSeconds(&g.p, d))
}

// Limiter returns the Limiter the guard decides with.
func (g *Guard) Limiter() *throttle.Limiter { return g.l }

// Begin is BeginN with a cost of 1.
func (g *Guard) Begin(ctx context.Context, id string) (context.Context, Ticket, *Rejection) {
	return g.BeginN(ctx, id, 1)
}

// BeginN decides a request whose identity is id and, under a Quota policy,
// whose cost is cost (other modes ignore it: a request holds its key or
// not), with Limiter.Admit or Limiter.AdmitN, so the policy's
// WhenStoreFails applies. When the request is admitted, BeginN returns the
// context the handler must run with (ctx itself unless the policy puts the
// lease in it: Exclusive, Fence or Reentrant; an Exclusive context is
// cancelled, with cause throttle.ErrLost, if the lease is lost) and the
// ticket to Run it with. Otherwise it returns ctx and the rejection to
// answer with: a negative cost is a bad request (400), a cost above the
// policy's Burst a request too large to ever be allowed (413). A cost of 0
// charges nothing but goes ahead only while a request of cost 1 would. A
// request let through because the store failed open gets a ticket that
// holds nothing. On a Replay policy, BeginN is BeginReplay without a body
// fingerprint.
func (g *Guard) BeginN(ctx context.Context, id string, cost int) (context.Context, Ticket, *Rejection) {
	ctx, t, rej, _ := g.BeginOrWrite(ctx, id, cost, nil)
	return ctx, t, rej
}

// BeginOrWrite is BeginN for an adapter that answers rejections with Write
// (it has no rejection handler of its own): a request turned away because
// its key is held or its quota spent, the commonest rejection by far, is
// answered here, on w, and BeginOrWrite reports written; the adapter then
// only ends the chain in its framework's way. That Rejection never leaves
// the call, so it is not allocated: a tenth of a duplicate's cost. Every
// other outcome is BeginN's, with written false, the rejection (if any)
// still to be answered. Under Policy.DryRun nothing is written, and with a
// nil w BeginOrWrite is BeginN.
func (g *Guard) BeginOrWrite(ctx context.Context, id string, cost int, w http.ResponseWriter) (_ context.Context, _ Ticket, _ *Rejection, written bool) {
	switch g.p.Mode {
	case throttle.Quota:
		return g.beginQuota(ctx, id, cost, w)
	case throttle.Replay:
		ctx, t, rej := g.BeginReplay(ctx, id, "")
		return ctx, t, rej, false
	}
	lease, hold, err := g.path.Admit(ctx, id)
	if err != nil {
		if ce, ok := err.(*throttle.ContendedError); ok && w != nil && !g.p.DryRun {
			g.writeContended(w, err, ce, nil)
			return ctx, Ticket{}, nil, true
		}
		ctx, t, rej := g.reject(ctx, g.rejection(err))
		return ctx, t, rej, false
	}
	t := Ticket{g: g, lease: lease, hold: hold}
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
func (g *Guard) beginQuota(ctx context.Context, id string, cost int, w http.ResponseWriter) (context.Context, Ticket, *Rejection, bool) {
	if cost < 0 || cost > g.p.Burst {
		g.observe(ctx, throttle.Event{Kind: throttle.KeyError})
		status := http.StatusBadRequest
		if cost > 0 {
			status = http.StatusRequestEntityTooLarge
		}
		return ctx, Ticket{}, g.newRejection(status, ReasonBadCost, throttle.ErrInvalid), false
	}
	d, err := g.l.AdmitN(ctx, id, cost)
	if err != nil {
		if ce, ok := err.(*throttle.ContendedError); ok && w != nil && !g.p.DryRun {
			g.writeContended(w, err, ce, d)
			return ctx, Ticket{}, nil, true
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
	t := Ticket{g: g}
	if d != nil {
		t.quota, t.hasQuota = *d, true
		if g.p.CountOnlyFailures {
			t.id, t.refund = id, cost
		}
	}
	return ctx, t, nil, false
}

// BadKey answers a request whose key could not be built: 400, or the 4xx
// status the key function's error carries through an HTTPStatus method (a
// *keyfuncs.Error says 413 for a body too long to hash); any other status
// is ignored, since the request, not the server, is at fault. Adapters call
// it when their key function fails, so that such a request is answered
// alike everywhere and never put under one key shared with others. It does
// not touch the store. Under Policy.DryRun it returns nil: the request
// goes ahead, unguarded, and is only counted.
func (g *Guard) BadKey(err error) *Rejection {
	g.observe(context.Background(), throttle.Event{Kind: throttle.KeyError})
	if g.p.DryRun {
		return nil
	}
	return g.newRejection(clientStatus(err), ReasonBadKey, err)
}

// BadCost answers a request whose cost could not be worked out (the
// adapter's cost function failed), as BadKey does a key: 400, or the 4xx
// status the error carries; nil under Policy.DryRun, as BadKey.
func (g *Guard) BadCost(err error) *Rejection {
	g.observe(context.Background(), throttle.Event{Kind: throttle.KeyError})
	if g.p.DryRun {
		return nil
	}
	return g.newRejection(clientStatus(err), ReasonBadCost, err)
}

// reject returns rej as BeginN's answer, except under Policy.DryRun, where
// the request goes ahead with a ticket that holds nothing but, when it was
// turned away for its key or quota (which the Limiter observed as
// DryRunRejected), the rejection's RateLimit fields. A request whose client
// left is answered as ever: nobody is waiting for it.
func (g *Guard) reject(ctx context.Context, rej *Rejection) (context.Context, Ticket, *Rejection) {
	if g.p.DryRun && rej.Reason != ReasonCanceled {
		t := Ticket{g: g}
		if rej.Reason == ReasonContended {
			t.dryRun = rej
		}
		return ctx, t, nil
	}
	return ctx, Ticket{}, rej
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
