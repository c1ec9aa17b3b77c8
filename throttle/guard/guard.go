package guard

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

// Guard is one limiter's request handling, made by Lock, Quota or Replay
// when a middleware is built. It is safe for concurrent use.
type Guard struct {
	name     string
	mode     throttle.Mode
	window   time.Duration // a lock's or Replay's TTL, a Quota's first window
	holders  int           // an Exclusive lock's LockConfig.Holders, at least 1
	status   int           // of a request turned away for its key or quota
	failed   func(status int) bool
	cost     func(*http.Request) (int, error)
	observer throttle.Observer

	// holds: requests hold their keys with Lock.Hold (see Lock).
	countOnlyFailures, fence, reentrant, dryRun, holds bool

	skip   func(*http.Request) bool // Skip's; nil: none skipped
	legacy bool                     // LegacyHeaders

	lock   *throttle.Lock // one of the three is set
	quota  *throttle.Quota
	replay *throttle.Replay
	plan   *plan  // a Quota's rates when fixed,
	plans  *plans // else the function that gives them

	// What the answers repeat, built once by initFields.
	policyField, heldField []string
	contendedDetail        string
	contendedBody          []byte
	rejectedFields         fieldCache // by t
	placeFields            fieldCache // an admitted holder's, by the places left
}

// Option configures a Guard.
type Option func(*Guard)

// WithStatus sets the status, a 4xx or 5xx, of a request whose key is held
// or quota spent: by default 429, or 409 for an Exclusive lock.
func WithStatus(status int) Option {
	return func(g *Guard) {
		if status >= 400 && status <= 599 {
			g.status = status
		}
	}
}

// WithFailed tells a failed request from the handler's status, for Dedupe
// and Replay (which release a failed request's key) and CountOnlyFailures.
// Default: status >= 400.
func WithFailed(failed func(status int) bool) Option {
	return func(g *Guard) {
		if failed != nil {
			g.failed = failed
		}
	}
}

// CountOnlyFailures makes a Quota charge only failed requests, such as wrong
// passwords. A request is charged before the handler runs and refunded when
// it succeeds, so that concurrent requests never exceed the quota together.
func CountOnlyFailures() Option {
	return func(g *Guard) { g.countOnlyFailures = true }
}

// WithCost makes a Quota charge each request what f says instead of 1 (the
// bytes of an upload): a cost above Burst gets 413, a negative one 400, an
// error of f 400 or the 4xx status it carries.
func WithCost(f func(r *http.Request) (int, error)) Option {
	return func(g *Guard) { g.cost = f }
}

// Lock returns the Guard of l: each request holds its key as l's Mode says.
// It panics when l is nil.
func Lock(l *throttle.Lock, opts ...Option) *Guard {
	if l == nil {
		panic("guard: Lock needs a non-nil *throttle.Lock")
	}
	c := l.Config()
	g := &Guard{lock: l, name: c.Name, mode: c.Mode, window: c.TTL, fence: c.Fence, reentrant: c.Reentrant,
		holders: max(c.Holders, 1)}
	g.holds = c.Mode != throttle.Exclusive && !c.Fence && !c.Reentrant && c.Observer == nil
	return g.init(c.Options, opts)
}

// Replay returns the Guard of r: a key's first successful response is
// recorded and its duplicates get it again; a duplicate with another body
// (an Idempotency-Key reused for another body) gets 422. It panics when r is nil.
func Replay(r *throttle.Replay, opts ...Option) *Guard {
	if r == nil {
		panic("guard: Replay needs a non-nil *throttle.Replay")
	}
	c := r.Config()
	g := &Guard{replay: r, name: c.Name, mode: throttle.ModeReplay, window: c.TTL, fence: c.Fence}
	return g.init(c.Options, opts)
}

func (g *Guard) init(o throttle.Options, opts []Option) *Guard {
	g.dryRun, g.observer = o.DryRun, o.Observer
	g.status = http.StatusTooManyRequests
	if g.mode == throttle.Exclusive {
		g.status = http.StatusConflict
	}
	g.failed = func(status int) bool { return status >= 400 }
	g.holders = max(g.holders, 1)
	for _, o := range opts {
		o(g)
	}
	if g.quota == nil {
		g.cost, g.countOnlyFailures = nil, false
	}
	g.initFields()
	return g
}

// begin decides a request: one that goes ahead gets t filled and the
// context to run with; else the rejection, or, with write, a refusal of the
// key or quota is answered on w without allocating one (written).
func (g *Guard) begin(ctx context.Context, t *ticket, r *http.Request, id string, cost int, fp string, w http.ResponseWriter, write bool) (_ context.Context, _ *Rejection, written bool) {
	switch {
	case g.replay != nil:
		ctx, rej := g.beginReplay(ctx, t, id, fp)
		return ctx, rej, false
	case g.quota != nil:
		rej, written := g.beginQuota(ctx, t, r, id, cost, w, write)
		return ctx, rej, written
	}
	var err error
	if g.holds {
		t.hold, err = g.lock.Hold(ctx, id)
	} else {
		t.lease, err = g.lock.Admit(ctx, id)
	}
	if err != nil {
		*t = ticket{} // whatever came with the error is not held
		rej, written := g.refused(t, err, nil, nil, w, write)
		return ctx, rej, written
	}
	t.g = g
	switch {
	case t.lease == nil: // held with Lock.Hold, or failed open
	case g.mode == throttle.Exclusive:
		ctx, t.stop = t.lease.KeepAlive(ctx)
	case g.fence || g.reentrant:
		ctx = throttle.WithLease(ctx, t.lease)
	}
	return ctx, nil, false
}

// refused is begin's answer to a request err turned away, with its Quota
// plan p and decision d, copied so that the caller's may stay on its stack.
func (g *Guard) refused(t *ticket, err error, p *plan, d *store.Decision, w http.ResponseWriter, write bool) (*Rejection, bool) {
	if ce, ok := err.(*throttle.ContendedError); ok && write && !g.dryRun {
		rej := Rejection{Status: g.status, Reason: ReasonContended, RetryAfter: ce.RetryAfter,
			Policy: g.name, Detail: g.contendedDetail, Err: err, g: g, plan: p}
		if d != nil {
			dc := *d
			rej.Decision = &dc
		}
		rej.Write(w)
		return nil, true
	}
	rej := g.rejection(err)
	if d != nil {
		dc := *d
		rej.Decision, rej.plan = &dc, p
	}
	return g.reject(t, rej), false
}

// reject returns rej, except under DryRun, where the request goes ahead
// holding nothing (with a contended rejection's RateLimit fields).
func (g *Guard) reject(t *ticket, rej *Rejection) *Rejection {
	if !g.dryRun || rej.Reason == ReasonCanceled {
		return rej
	}
	t.g = g
	if rej.Reason == ReasonContended {
		t.dryRun = rej
	}
	return nil
}

// rejection answers an error of Lock.Admit, Quota.Admit or Replay.Claim.
func (g *Guard) rejection(err error) *Rejection {
	ce, ok := err.(*throttle.ContendedError) // errors.As would move ce to the heap
	if !ok {
		ce = contendedIn(err)
	}
	switch {
	case ce != nil:
		rej := g.newRejection(g.status, ReasonContended, err)
		rej.RetryAfter = ce.RetryAfter
		return rej
	case !errors.Is(err, throttle.ErrStore) && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		return g.newRejection(http.StatusServiceUnavailable, ReasonCanceled, err)
	}
	rej := g.newRejection(http.StatusServiceUnavailable, ReasonStoreUnavailable, err)
	rej.RetryAfter = time.Second
	return rej
}

func contendedIn(err error) *throttle.ContendedError {
	var ce *throttle.ContendedError
	errors.As(err, &ce)
	return ce
}

// badInput answers a request without identity or cost: 400, or the 4xx of
// err's HTTPStatus method; nil under DryRun, which lets it through unguarded.
func (g *Guard) badInput(err error, reason Reason) *Rejection {
	g.observe(context.Background(), throttle.Event{Kind: "key_error"})
	if g.dryRun {
		return nil
	}
	status := http.StatusBadRequest
	var hs interface{ HTTPStatus() int }
	if errors.As(err, &hs) && hs.HTTPStatus() >= 400 && hs.HTTPStatus() < 500 {
		status = hs.HTTPStatus()
	}
	return g.newRejection(status, reason, err)
}

func (g *Guard) observe(ctx context.Context, e throttle.Event) {
	if g.observer != nil {
		e.Policy, e.Mode = g.name, g.mode
		g.observer.Observe(ctx, e)
	}
}

// Serve decides the request r, whose identity the adapter's key function
// built as id or failed to build with keyErr: it answers on w, or runs next.
// route is the route template the framework matched, such as net/http's
// r.Pattern ("POST /orders/{id}": its method and host are dropped),
// "/orders/:id" (gin's c.FullPath(), echo's c.Path()), or "" when none
// matched: a Replay scopes
// its stored keys by method and route, so that one Replay on two routes
// never answers one route's request with the other's response (""
// stands for r.URL.Path). Locks and Quotas store id alone. A request Skip
// lets through goes to next at once, without a store call or RateLimit
// fields.
//
// next runs the rest of the chain with r (carrying the context the hold
// needs) and returns the client's status, 200 when nothing was written. For
// a Replay key's first request c is not nil: next feeds it the response as
// it is sent (WriteHeader, every body write, Abandon on a flush or hijack),
// or once the chain returned if the framework buffers. The hold ends when
// next returns or panics (the panic keeps unwinding).
//
// A request turned away never reaches next: Serve answers it with
// Rejection.Write when write is true, else sets its Retry-After and
// RateLimit fields on w and returns it for the adapter's own handler; a
// Replay duplicate is always answered here. ran reports whether next ran.
func (g *Guard) Serve(w http.ResponseWriter, r *http.Request, route, id string, keyErr error,
	next func(r *http.Request, c *Capture) (status int), write bool) (ran bool, rej *Rejection) {
	if g.skipped(r) {
		next(r, nil)
		return true, nil
	}
	var t ticket
	cost, fp, err := 1, "", keyErr
	switch {
	case err != nil:
		rej = g.badInput(err, ReasonBadKey)
	case g.cost != nil:
		if cost, err = g.cost(r); err != nil {
			rej = g.badInput(err, ReasonBadCost)
		}
	case g.replay != nil:
		if fp, err = idempotencyFingerprint(r); err != nil {
			rej = g.badInput(err, ReasonBadKey)
		}
		id = replayID(r, route, id)
	}
	ctx := r.Context()
	if err == nil {
		var written bool
		if ctx, rej, written = g.begin(ctx, &t, r, id, cost, fp, w, write); written {
			return false, nil
		}
	}
	switch {
	case rej != nil && rej.replay != nil:
		rej.writeReplay(w)
		return false, nil
	case rej != nil && write:
		rej.Write(w)
		return false, nil
	case rej != nil:
		rej.setHeaders(w.Header())
		return false, rej
	}
	if ctx != r.Context() {
		r = r.WithContext(ctx)
	}
	t.setHeaders(w.Header())
	t.run(ctx, func() int {
		status := next(r, t.capture)
		t.capture.WriteHeader(w.Header(), status) // nothing was sent: the header goes out now
		return status
	})
	return true, nil
}

// ticket is an admitted request's hold on its key, which run ends; that of
// a request let through unguarded (failed open, a dry run) holds nothing.
type ticket struct {
	g           *Guard
	lease       *throttle.Lease
	hold        throttle.Hold // when g.holds
	stop        context.CancelFunc
	plan        *plan            // a Quota's rates when it decided,
	quota       store.Decision   // and its decision (a pointer would be an allocation),
	quotas      []store.Decision // or, for several rates, theirs
	id          string           // and refund: what CountOnlyFailures gives back
	refund      int
	dryRun      *Rejection // that a dry run let through, for its fields
	capture     *Capture   // and fingerprint: a Replay key's first request's
	fingerprint string
	since       time.Time // when the chain started, for an Observer
}

// setHeaders sets an admitted request's RateLimit fields: r=0 for a key's
// holder, what remains of a quota, only RateLimit-Policy when unguarded.
func (t *ticket) setHeaders(h http.Header) {
	g := t.g
	switch {
	case g == nil:
		return
	case t.dryRun != nil:
		t.dryRun.setFields(h)
	case t.plan != nil:
		t.plan.setFields(h, &t.quota, t.quotas)
	case g.policyField == nil: // rates of a failed-open request's own
	case t.lease == nil && (t.hold == throttle.Hold{}): // unguarded
		h["Ratelimit-Policy"] = g.policyField
	case g.holders > 1 && t.lease != nil:
		h["Ratelimit-Policy"] = g.policyField
		h["Ratelimit"] = g.placeFields.get(int64(g.holders - t.lease.Holders()))
	default:
		h["Ratelimit-Policy"] = g.policyField
		h["Ratelimit"] = g.heldField
	}
	if g.legacy {
		t.setLegacy(h)
	}
}

// run runs next and ends the hold with its status, or as a failure when it
// panics or calls runtime.Goexit. Nothing is recovered.
func (t *ticket) run(ctx context.Context, next func() (status int)) {
	if t.lease != nil && t.g.observer != nil {
		t.since = time.Now()
	}
	returned := false
	defer func() {
		if !returned {
			t.finish(ctx, 0, true)
		}
	}()
	status := next()
	returned = true
	t.finish(ctx, status, false)
}

// finish ends the hold, even if ctx was cancelled: Exclusive releases the
// key, Dedupe and Replay on failure (Replay records a success), Cooldown
// keeps it; CountOnlyFailures refunds a success.
func (t *ticket) finish(ctx context.Context, status int, panicked bool) {
	g := t.g
	if g == nil {
		return
	}
	failed := panicked || g.failed(status)
	switch {
	case t.refund > 0:
		if !failed { // a failed refund leaves the charge: the safe side
			t.refundCharge(ctx)
		}
		return
	case (t.hold != throttle.Hold{}):
		if failed && g.mode == throttle.Dedupe {
			_ = t.hold.Release(ctx) // no Observer to tell (see Guard.holds)
		}
		return
	case t.lease == nil:
		return
	case t.stop != nil:
		t.stop()
	}
	switch {
	case !failed && g.mode == throttle.ModeReplay:
		t.record(ctx)
	case g.mode == throttle.Exclusive || failed && g.mode != throttle.Cooldown:
		t.release(ctx, failed, panicked)
	}
}

// release frees the lease's key; after a failed release it expires by itself.
func (t *ticket) release(ctx context.Context, failed, panicked bool) {
	if err := t.lease.Release(ctx); err != nil || t.g.observer == nil {
		return
	}
	reason := "done"
	switch {
	case panicked:
		reason = "panic"
	case failed:
		reason = "failed"
	}
	t.g.observe(ctx, throttle.Event{Kind: "released", Hold: time.Since(t.since), Reason: reason})
}
