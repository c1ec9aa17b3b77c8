package flow

import (
	"context"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/overload"
)

// Permit is a call's leave to go ahead, and the hold it ends. The zero
// Permit holds nothing.
type Permit struct {
	ctx     context.Context
	limits  Limits
	records bool
	hold    hold // what End ends: zero for a call that holds nothing
}

// hold is what a permit holds, by job: a lock's key, a Quota's charge, or
// a Replay key marked in flight.
type hold struct {
	job    *Job
	key    throttle.Hold   // a lock's key held with Lock.Hold,
	lease  *throttle.Lease // or with a Lease; a Replay's mark
	stop   context.CancelFunc
	id     string          // a CountOnlyFailures Quota's identity; a Replay's Call.Fingerprint
	refund int             // what a CountOnlyFailures success gets back
	since  time.Duration   // since epoch, for an Observer
	shed   overload.Permit // an Overload's
}

// epoch is what hold.since counts from, on the monotonic clock.
var epoch = time.Now()

// Context is the context to run the call with: it carries the lease
// (throttle.LeaseFrom) when the job needs one, and an Exclusive lock's is
// cancelled with throttle.ErrLost when its lease is lost.
func (p *Permit) Context() context.Context { return p.ctx }

// Limits is what the RateLimit fields say of the call as it goes ahead.
func (p *Permit) Limits() *Limits { return &p.limits }

// Records reports whether the call is a Replay key's first: its
// Outcome.Answer, if it succeeds, is kept for its duplicates.
func (p *Permit) Records() bool { return p.records }

// End ends the hold as the job's mode says for the call's outcome o, even
// if the permit's context ended: an Exclusive lock frees its key, Dedupe
// and Replay free a failed call's, a Replay records a success's answer, a
// Cooldown keeps its key, and CountOnlyFailures refunds a success. Only
// the first End of a permit does anything.
func (p *Permit) End(o Outcome) {
	h := p.hold
	p.hold = hold{}
	switch j := h.job; {
	case j == nil:
	case j.overload != nil:
		h.endOverload(o)
	case j.quota != nil:
		if h.refund > 0 && !o.Failed { // a failed refund leaves the charge: the safe side
			p.refundCharge(h)
		}
	case h.key != (throttle.Hold{}):
		if o.Failed && j.mode == throttle.Dedupe {
			_ = h.key.Release(p.ctx) // no Observer to tell (see Job.holds)
		}
	case h.lease != nil:
		h.endLease(p.ctx, o)
	}
}

// endLease ends a hold under a lease: a Replay records a success's answer;
// a lock stops its refresher and frees its key as its mode says.
func (h *hold) endLease(ctx context.Context, o Outcome) {
	j := h.job
	if j.replay != nil && !o.Failed {
		h.record(ctx, o.Answer)
		return
	}
	if h.stop != nil {
		h.stop()
	}
	if j.mode == throttle.Exclusive || o.Failed && j.mode != throttle.Cooldown {
		h.release(ctx, o)
	}
}

// release frees the lease's key; after a failed release it expires by itself.
func (h *hold) release(ctx context.Context, o Outcome) {
	if err := h.lease.Release(ctx); err != nil || h.job.observer == nil {
		return
	}
	reason := "done"
	switch {
	case o.Panicked:
		reason = "panic"
	case o.Failed:
		reason = "failed"
	}
	h.job.observe(ctx, throttle.Event{Kind: "released", Hold: time.Since(epoch) - h.since, Reason: reason})
}
