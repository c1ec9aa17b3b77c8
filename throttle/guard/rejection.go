package guard

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/go-throttle/throttle/throttle"
)

// Reason says why a request was turned away, for logs, metrics and custom
// rejection handlers: the status alone does not tell a duplicate from a
// custom status (WithStatus), or a store outage from a client that left.
type Reason uint8

const (
	// ReasonContended means another request holds the key: the policy's
	// status (429, or 409 for Exclusive; WithStatus).
	ReasonContended Reason = iota + 1
	// ReasonBadKey means the key could not be built from the request: 400,
	// or the 4xx the key function's error carries (413 for a body too long
	// to hash). The problem's type links here, and its detail names what
	// was missing or bad when the key function said so with a
	// *keyfuncs.Error (`header "X-User-ID": missing`,
	// `header "Idempotency-Key": empty`): send that value, or fix it, and
	// try again.
	ReasonBadKey
	// ReasonStoreUnavailable means the store failed and the policy fails
	// closed: 503.
	ReasonStoreUnavailable
	// ReasonCanceled means the request's context ended before a decision:
	// the client is gone, so the answer (503) is for logs, not for it.
	ReasonCanceled
	// ReasonBadCost means a Quota request's cost is out of range or could
	// not be worked out: 413 when it is above the policy's Burst (however
	// long the client waited, it would never be allowed), 400 when it is
	// negative, the cost function's 4xx status (or 400) when it failed.
	ReasonBadCost
	// ReasonReplayed means the request is a duplicate of a Replay key's
	// first request, which succeeded: it is answered with that recorded
	// response (Rejection.Replay), whose status it has.
	ReasonReplayed
	// ReasonInFlight means the request is a duplicate of a Replay key's
	// first request, which was still running when the policy's Wait ended:
	// 409 Conflict, Retry-After 1 s.
	ReasonInFlight
	// ReasonKeyReused means the request has a Replay key already used by a
	// request with another body (an Idempotency-Key reused for a
	// different payload): 422 Unprocessable Content.
	ReasonKeyReused
	// ReasonNotKept means the request is a duplicate of a Replay key's
	// first request, which was processed and succeeded, but whose
	// response could not be kept (larger than the store keeps, or the
	// store failed while it was written): 409 Conflict at once, with no
	// wait, and a Retry-After of the key's remaining window. The request
	// is not processed a second time before the key expires.
	ReasonNotKept
)

// String returns the reason's name, such as "bad-key": a stable label for
// logs and metrics.
func (r Reason) String() string {
	switch r {
	case ReasonContended:
		return "contended"
	case ReasonBadKey:
		return "bad-key"
	case ReasonStoreUnavailable:
		return "store-unavailable"
	case ReasonCanceled:
		return "canceled"
	case ReasonBadCost:
		return "bad-cost"
	case ReasonReplayed:
		return "replayed"
	case ReasonInFlight:
		return "in-flight"
	case ReasonKeyReused:
		return "key-reused"
	case ReasonNotKept:
		return "not-kept"
	}
	return "unknown"
}

// Rejection is everything needed to answer a request that does not go
// ahead, decided once here so that every adapter answers alike. Write renders
// it as RFC 9457 problem+json with Retry-After and RateLimit headers; an
// adapter hands it to the application's own rejection handler instead when
// one is set, so that services with their own error format keep the same
// statuses and headers.
type Rejection struct {
	// Status is the HTTP status to answer with; see Reason for which.
	Status int
	// Reason says why the request was turned away.
	Reason Reason
	// RetryAfter is how long the client should wait before trying again:
	// the holder's remaining time, or how long until a Quota allows the
	// request, for ReasonContended; one second for ReasonStoreUnavailable;
	// 0 when there is nothing to wait for; -1 when the key is held without
	// an expiry (by something other than throttle).
	RetryAfter time.Duration
	// Policy names the limiter that turned the request away, for logs
	// and custom answers.
	Policy string
	// Decision is the Quota decision that refused the request, for the
	// RateLimit field's remaining quota; nil for other modes and reasons.
	Decision *throttle.Decision
	// Err is the underlying error, for logs only: it may name keys and
	// internals, so it is never sent to the client.
	Err error
	// Replay is the recorded response to answer with, for ReasonReplayed;
	// nil otherwise. Write sends it as it is, and adapters send it even
	// when the application has its own rejection handler: it is the
	// answer the client asked for, not an error.
	Replay *Response

	// g is the Guard that made the rejection, whose cached answers
	// Write may use (see Rejection.cached); nil for one made elsewhere.
	g *Guard
}

// zeroPolicy is what a Rejection made elsewhere than in a Guard reads.
var zeroPolicy policy

// policy returns the policy of the Guard that made rej, or the zero policy
// for a Rejection made elsewhere.
func (rej *Rejection) policy() *policy {
	if rej.g == nil {
		return &zeroPolicy
	}
	return &rej.g.p
}

// newRejection returns a rejection under g's policy.
func (g *Guard) newRejection(status int, reason Reason, err error) *Rejection {
	return &Rejection{Status: status, Reason: reason, Policy: g.p.name, Err: err, g: g}
}

// rejection turns an error of Lock.Admit, Quota.Admit or Replay.Claim into the answer for
// the client.
func (g *Guard) rejection(err error) *Rejection {
	// A duplicate's error is the limiter's *ContendedError itself: a type
	// assertion finds it without errors.As's reflection (and without
	// moving a variable to the heap for it to write to).
	if ce, ok := err.(*throttle.ContendedError); ok {
		return g.contended(err, ce)
	}
	var ce *throttle.ContendedError
	switch {
	case errors.As(err, &ce):
		return g.contended(err, ce)
	case !errors.Is(err, throttle.ErrStore) &&
		(errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		// The caller's context ended: nobody is listening any more. (A
		// store call that ran past Options.Timeout is ErrStore, below.)
		return g.newRejection(http.StatusServiceUnavailable, ReasonCanceled, err)
	}
	// ErrStore under a fail-closed policy, or anything Admit may return
	// one day that is not the client's doing: unavailable, no internals.
	r := g.newRejection(http.StatusServiceUnavailable, ReasonStoreUnavailable, err)
	r.RetryAfter = time.Second
	return r
}

// writeContended answers, with Write on w, a request turned away because
// ce (err itself) says its key is held or its quota spent, d being the
// quota's decision if any, as contended's rejection would be answered. The
// Rejection stays on the stack: Write keeps nothing of it. d is copied, so
// that the caller's decision, which may be on its stack, stays there.
func (g *Guard) writeContended(w http.ResponseWriter, err error, ce *throttle.ContendedError, d *throttle.Decision) {
	rej := Rejection{Status: g.p.status, Reason: ReasonContended, RetryAfter: ce.RetryAfter,
		Policy: g.p.name, Err: err, g: g}
	if d != nil {
		dc := *d
		rej.Decision = &dc
	}
	Write(w, &rej)
}

// contended returns the rejection of a request turned away because ce
// (err, or wrapped in it) says its key is held or its quota spent.
func (g *Guard) contended(err error, ce *throttle.ContendedError) *Rejection {
	r := g.newRejection(g.p.status, ReasonContended, err)
	r.RetryAfter = ce.RetryAfter
	return r
}
