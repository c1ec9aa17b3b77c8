package guard

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
)

// Guard is one limiter's request handling, minus the framework: Lock,
// Quota or Replay makes one per middleware, when the middleware is built.
// It works out once what every admitted response repeats (the
// RateLimit-Policy field, and the RateLimit field of a lock's holder), so
// that a request pays only for what is its own. It is safe for concurrent
// use.
type Guard struct {
	p policy
	// lock, quota and replay is the limiter the guard decides with: one
	// of them is set.
	lock   *throttle.Lock
	quota  *throttle.Quota
	replay *throttle.Replay

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
	// key or quota (ReasonContended), and rejectedFields the RateLimit
	// values of such rejections by their t: see cache.go.
	contendedBody  []byte
	rejectedFields *fieldCache
	// quotaFields caches the RateLimit values of a Quota policy's
	// decisions (nil for other modes): see cache.go.
	quotaFields *quotaFields
	// holds says that a lock's requests hold their keys with Lock.Hold:
	// they only ever give them back early (Dedupe and Cooldown, without
	// Fence, Reentrant or an Observer that times holds).
	holds bool
	// cost and fingerprint are the policy's per-request functions, nil
	// when it uses none.
	cost        func(*http.Request) (int, error)
	fingerprint func(*http.Request) (string, error)
}

// policy is what the guard needs to know of its limiter and options.
type policy struct {
	name string
	mode throttle.Mode
	// window is a lock's or a Replay's TTL, a Quota's rate window.
	window time.Duration
	rate   throttle.Rate // a Quota's, Burst filled in
	// status is the status of a request turned away for its key or quota.
	status int
	// failed tells a failed request from its status (WithFailed).
	failed func(status int) bool
	// countOnlyFailures refunds a Quota's successful requests.
	countOnlyFailures bool
	fence, reentrant  bool
	dryRun            bool
	observer          throttle.Observer
}

// Option configures a Guard.
type Option func(*Guard)

// WithStatus sets the status of a request turned away because its key is
// held or its quota spent: by default 429 Too Many Requests, or 409
// Conflict for an Exclusive lock. It must be a 4xx or 5xx status. (A Replay
// duplicate whose original is still in flight when its wait ends gets 409
// whatever this says.)
func WithStatus(status int) Option {
	return func(g *Guard) {
		if status >= 400 && status <= 599 {
			g.p.status = status
		}
	}
}

// WithFailed tells from the handler's status whether the request failed:
// Dedupe and Replay then release its key (Replay records nothing), and
// CountOnlyFailures keeps its charge. Default: status >= 400.
func WithFailed(failed func(status int) bool) Option {
	return func(g *Guard) {
		if failed != nil {
			g.p.failed = failed
		}
	}
}

// CountOnlyFailures makes a Quota charge only failed requests (see
// WithFailed): a login form allowing 5 wrong passwords per 15 minutes, for
// which successes cost nothing. Each request is charged before the handler
// runs and refunded when it succeeds, so requests running at the same time
// can never together exceed the quota: of 50 concurrent wrong passwords
// against a Burst of 5, exactly 5 reach the handler. The price is that
// successes in flight hold quota until they return. Other guards ignore it.
func CountOnlyFailures() Option {
	return func(g *Guard) { g.p.countOnlyFailures = true }
}

// Lock returns the Guard of l: each request holds its key as l's Mode says
// (Dedupe, Cooldown or Exclusive; see package throttle). It panics when l
// is nil: a wiring mistake to catch at start-up.
func Lock(l *throttle.Lock, opts ...Option) *Guard {
	if l == nil {
		panic("guard: Lock needs a non-nil *throttle.Lock")
	}
	c := l.Config()
	g := &Guard{lock: l, p: policy{name: c.Name, mode: c.Mode, window: c.TTL, fence: c.Fence, reentrant: c.Reentrant}}
	g.holds = c.Mode != throttle.Exclusive && !c.Fence && !c.Reentrant && c.Observer == nil
	return g.init(c.Options, opts)
}

// Quota returns the Guard of q under rate r: each request is charged 1
// (WithCost for another cost) and turned away while r is spent. It panics
// when q is nil or r is not usable: a wiring mistake to catch at start-up.
func Quota(q *throttle.Quota, r throttle.Rate, opts ...Option) *Guard {
	if q == nil {
		panic("guard: Quota needs a non-nil *throttle.Quota")
	}
	if r.Burst == 0 {
		r.Burst = r.Limit
	}
	if err := storekit.Check(r, 0); err != nil {
		panic("guard: " + err.Error())
	}
	c := q.Config()
	g := &Guard{quota: q, p: policy{name: c.Name, mode: throttle.ModeQuota, window: r.Window, rate: r}}
	g = g.init(c.Options, opts)
	g.quotaFields = newQuotaFields(&g.p)
	return g
}

// Replay returns the Guard of r: the first request of a key runs and its
// response is recorded; its duplicates get that response again (see
// package throttle). The body's fingerprint (WithFingerprint) tells a
// reused key from a retry. It panics when r is nil.
func Replay(r *throttle.Replay, opts ...Option) *Guard {
	if r == nil {
		panic("guard: Replay needs a non-nil *throttle.Replay")
	}
	c := r.Config()
	g := &Guard{replay: r, p: policy{name: c.Name, mode: throttle.ModeReplay, window: c.TTL, fence: c.Fence}}
	return g.init(c.Options, opts)
}

// init applies the limiter's options and opts, and works out what every
// response repeats.
func (g *Guard) init(o throttle.Options, opts []Option) *Guard {
	g.p.dryRun, g.p.observer = o.DryRun, o.Observer
	g.p.status = http.StatusTooManyRequests
	if g.p.mode == throttle.Exclusive {
		g.p.status = http.StatusConflict
	}
	g.p.failed = func(status int) bool { return status >= 400 }
	g.rc = newRecording(Recording{})
	for _, o := range opts {
		o(g)
	}
	g.inputs()
	g.policyField = []string{policyField(&g.p)}
	t := int64(-1) // no "t" for Exclusive: the hold lasts as long as the work
	if g.p.mode != throttle.Exclusive {
		t = seconds(g.p.window)
	}
	g.heldField = []string{limitField(g.p.name, 0, t)}
	g.contendedBody = buildBody(&Rejection{Status: g.p.status, Reason: ReasonContended, g: g})
	name := g.p.name
	g.rejectedFields = newFieldCache(cachedLimitSeconds+1, func(t int64) string { return limitField(name, 0, t) })
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
	switch {
	case g.quota != nil:
		return g.beginQuota(ctx, id, cost, w)
	case g.replay != nil:
		ctx, t, rej := g.beginReplay(ctx, id, fingerprint)
		return ctx, t, rej, false
	}
	if g.holds {
		return g.beginHold(ctx, id, w)
	}
	lease, err := g.lock.Admit(ctx, id)
	if err != nil {
		ctx, t, rej, written := g.lockRejected(ctx, err, w)
		return ctx, t, rej, written
	}
	t := ticket{g: g, lease: lease}
	if lease == nil {
		return ctx, t, nil, false
	}
	switch {
	case g.p.mode == throttle.Exclusive:
		ctx, t.stop = lease.KeepAlive(ctx)
	case g.p.fence || g.p.reentrant:
		ctx = throttle.WithLease(ctx, lease)
	}
	return ctx, t, nil, false
}

// beginHold is begin for a lock whose requests only ever give their key
// back early (see Lock.Hold).
func (g *Guard) beginHold(ctx context.Context, id string, w http.ResponseWriter) (context.Context, ticket, *Rejection, bool) {
	hold, err := g.lock.Hold(ctx, id)
	if err != nil {
		return g.lockRejected(ctx, err, w)
	}
	return ctx, ticket{g: g, hold: hold}, nil, false
}

// lockRejected is begin's answer to a lock request that err turned away.
func (g *Guard) lockRejected(ctx context.Context, err error, w http.ResponseWriter) (context.Context, ticket, *Rejection, bool) {
	if ce, ok := err.(*throttle.ContendedError); ok && w != nil && !g.p.dryRun {
		g.writeContended(w, err, ce, nil)
		return ctx, ticket{}, nil, true
	}
	ctx, t, rej := g.reject(ctx, g.rejection(err))
	return ctx, t, rej, false
}

// beginQuota is begin for a Quota policy.
func (g *Guard) beginQuota(ctx context.Context, id string, cost int, w http.ResponseWriter) (context.Context, ticket, *Rejection, bool) {
	if cost < 0 || cost > g.p.rate.Burst {
		g.observe(ctx, throttle.Event{Kind: "key_error"})
		status := http.StatusBadRequest
		if cost > 0 {
			status = http.StatusRequestEntityTooLarge
		}
		return ctx, ticket{}, g.newRejection(status, ReasonBadCost, throttle.ErrInvalid), false
	}
	d, err := g.quota.Admit(ctx, id, g.p.rate, cost)
	if err != nil {
		if ce, ok := err.(*throttle.ContendedError); ok && w != nil && !g.p.dryRun {
			g.writeContended(w, err, ce, d)
			return ctx, ticket{}, nil, true
		}
		rej := g.rejection(err)
		if d != nil {
			// A copy: d itself stays on the stack (Quota.Admit is inlined).
			dc := *d
			rej.Decision = &dc
		}
		ctx, t, rej := g.reject(ctx, rej)
		return ctx, t, rej, false
	}
	t := ticket{g: g}
	if d != nil {
		t.quota, t.hasQuota = *d, true
		if g.p.countOnlyFailures {
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
// and the store is not asked. Under DryRun it returns nil: the
// request goes ahead, unguarded, and is only counted.
func (g *Guard) badInput(err error, reason Reason) *Rejection {
	g.observe(context.Background(), throttle.Event{Kind: "key_error"})
	if g.p.dryRun {
		return nil
	}
	return g.newRejection(clientStatus(err), reason, err)
}

// reject returns rej as begin's answer, except under DryRun, where
// the request goes ahead with a ticket that holds nothing but, when it was
// turned away for its key or quota (which the limiter observed as
// DryRunRejected), the rejection's RateLimit fields. A request whose client
// left is answered as ever: nobody is waiting for it.
func (g *Guard) reject(ctx context.Context, rej *Rejection) (context.Context, ticket, *Rejection) {
	if g.p.dryRun && rej.Reason != ReasonCanceled {
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
	if g.p.observer != nil {
		e.Policy, e.Mode = g.p.name, g.p.mode
		g.p.observer.Observe(ctx, e)
	}
}
