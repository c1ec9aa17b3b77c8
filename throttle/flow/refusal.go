package flow

import (
	"context"
	"errors"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

// Reason says why a call did not go ahead: a stable label for logs,
// metrics and an adapter's answer (package guard maps each to its status).
type Reason string

// The reasons.
const (
	ReasonContended        Reason = "contended"         // the key is held by another call, or the quota spent
	ReasonBadKey           Reason = "bad-key"           // Call.Err: the identity could not be built
	ReasonStoreUnavailable Reason = "store-unavailable" // the store failed and the limiter fails closed, or is full
	ReasonCanceled         Reason = "canceled"          // the call's context ended first
	ReasonBadCost          Reason = "bad-cost"          // a Quota call's cost is out of range, or WithCost failed
	ReasonInFlight         Reason = "in-flight"         // a Replay key's first call still runs: a retry gets its answer
	ReasonKeyReused        Reason = "key-reused"        // the Replay key came with another Fingerprint
	ReasonNotKept          Reason = "not-kept"          // a Replay key's first call succeeded, its answer was not kept
	ReasonBadRate          Reason = "bad-rate"          // a Quota's rate function gave rates that cannot be decided
	ReasonOverloaded       Reason = "overloaded"        // an Overload job shed the call: the process has more than it can serve in time
	ReasonReplayed         Reason = "replayed"          // a Replay duplicate: answer with Replayed, not as an error
)

// Refusal is the answer to a call that did not go ahead.
type Refusal struct {
	Reason Reason
	// RetryAfter is how long to wait before a retry, in whole seconds
	// rounded up (at least 1 s), as an HTTP Retry-After field says it; 0
	// when a retry does not help. For ReasonReplayed, how long the answer
	// is still kept (0 when unknown).
	RetryAfter time.Duration
	// Limits is what the RateLimit fields say of the refusal.
	Limits Limits
	// Replayed is the first call's answer, for ReasonReplayed.
	Replayed *Answer
	// Err is the underlying error, for logs only: it may name keys.
	Err error
}

// Violated names the policies that refused the call, most restrictive
// first: a Quota's rates that would allow it later (or, for a call of cost
// 0, those spent), else the limiter's name. The slice may be shared.
func (r *Refusal) Violated() []string {
	l := r.Limits
	switch {
	case l.p != nil && l.ds != nil:
		return l.p.violated(l.ds)
	case l.p != nil:
		return l.p.names[:1]
	case l.j != nil:
		return l.j.names
	}
	return nil
}

// seconds returns d in whole seconds, rounded up, at least 1.
func seconds(d time.Duration) int64 {
	return max(int64((d+time.Second-1)/time.Second), 1)
}

// refuse fills ref with the refusal of a call for err, an error of the
// limiter; lim is a Quota's decision, if it made one. It returns false,
// except under DryRun (and for a call whose context ended), where the call
// goes ahead holding nothing, with the RateLimit fields of a contended
// refusal.
func (j *Job) refuse(err error, lim Limits, p *Permit, ref *Refusal) bool {
	ce, ok := err.(*throttle.ContendedError) // errors.As would move ce to the heap
	if !ok {
		ce = contendedIn(err)
	}
	ref.Err, ref.Replayed = err, nil
	switch {
	case ce != nil:
		d := ce.RetryAfter
		if d < 0 { // held without expiry
			d = j.window
		}
		secs := seconds(d)
		if lim.kind == noLimits {
			lim = j.lockLimits(0, secs)
			lim.p = j.plan // for Violated
		}
		ref.Reason, ref.RetryAfter, ref.Limits = ReasonContended, time.Duration(secs)*time.Second, lim
	case !errors.Is(err, throttle.ErrStore) && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		ref.Reason, ref.RetryAfter, ref.Limits = ReasonCanceled, 0, j.policy()
		return false
	default:
		ref.Reason, ref.RetryAfter, ref.Limits = ReasonStoreUnavailable, time.Second, j.policy()
	}
	if !j.dryRun {
		return false
	}
	p.limits = j.policy()
	if ref.Reason == ReasonContended {
		p.limits = ref.Limits
	}
	return true
}

func contendedIn(err error) *throttle.ContendedError {
	var ce *throttle.ContendedError
	errors.As(err, &ce)
	return ce
}

// badInput refuses a call without identity or cost, or lets it through
// holding nothing under DryRun.
func (j *Job) badInput(err error, reason Reason, ref *Refusal) bool {
	j.observe(context.Background(), throttle.Event{Kind: "key_error"})
	*ref = Refusal{Reason: reason, Limits: j.policy(), Err: err}
	return j.dryRun
}

// costError is a Quota call's cost out of range. It matches
// store.ErrInvalid, and says the HTTP status it calls for.
type costError struct{ cost int }

func (e costError) Error() string        { return "flow: a call's cost is out of range" }
func (e costError) Is(target error) bool { return target == store.ErrInvalid }

// HTTPStatus is 413 for a cost that could never be allowed, else 400.
func (e costError) HTTPStatus() int {
	if e.cost > 0 {
		return 413
	}
	return 400
}
