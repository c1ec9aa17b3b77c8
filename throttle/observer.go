package throttle

import (
	"context"
	"time"
)

// Observer is told of every decision and lease event of a Limiter whose
// Policy.Observer it is, for metrics and traces: packages promthrottle
// (Prometheus) and otelthrottle (OpenTelemetry) implement it. Observe is
// called on the request's goroutine, synchronously, so it must be quick and
// must not block; ctx is the caller's context (for the request's span). An
// Event never carries a key, a token or a client address, so no observer
// can leak one. A Limiter without an Observer pays nothing: not even the
// clock readings that time store calls.
type Observer interface {
	Observe(ctx context.Context, e Event)
}

// EventKind says what an Event reports.
type EventKind uint8

const (
	// Admitted: a request went ahead (Admit, AdmitN), holding its key or
	// charged to its quota.
	Admitted EventKind = iota + 1
	// Rejected: a request was turned away because its key was held or its
	// quota spent. RetryAfter says for how long.
	Rejected
	// DryRunRejected: under Policy.DryRun, a request that would have been
	// Rejected went ahead.
	DryRunRejected
	// FailedOpen: the store failed and the request went ahead unguarded.
	FailedOpen
	// FailedClosed: the store failed and the request was turned away.
	FailedClosed
	// Fallback: under FailOver, the Fallback store admitted the request.
	Fallback
	// KeyError: the request's key (or cost) could not be built; it was
	// answered 4xx without asking the store.
	KeyError
	// StoreCall: one call to the store ended, after Latency; Op names it
	// and Err says whether it failed.
	StoreCall
	// Released: a held key was given back after Hold, for Reason.
	Released
	// Extended: a lease's refresher extended it.
	Extended
	// Lost: a held lease expired or was taken before it was released.
	Lost
	// FallbackOn: under FailOver, the Limiter stopped asking the failing
	// store (after three failures in a row) and decides in the Fallback.
	FallbackOn
	// FallbackOff: the store answered again, and the Limiter went back to
	// it.
	FallbackOff
)

// String returns the kind's name in snake case, such as "dry_run_rejected":
// the outcome label of the Prometheus and OpenTelemetry instruments.
func (k EventKind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "unknown"
}

var kindNames = [...]string{
	Admitted: "admitted", Rejected: "rejected", DryRunRejected: "dry_run_rejected",
	FailedOpen: "failed_open", FailedClosed: "failed_closed", Fallback: "fallback",
	KeyError: "key_error", StoreCall: "store_call", Released: "released",
	Extended: "extended", Lost: "lost", FallbackOn: "fallback_on", FallbackOff: "fallback_off",
}

// ReleaseReason says why a key was released.
type ReleaseReason uint8

const (
	// ReleaseDone: the work or the handler returned, and the mode releases
	// then (Exclusive, Do).
	ReleaseDone ReleaseReason = iota + 1
	// ReleaseFailed: the handler failed (Policy.Failed) or the work
	// returned an error, and Dedupe or Do gives the key back.
	ReleaseFailed
	// ReleasePanic: the handler or the work panicked.
	ReleasePanic
)

// String returns the reason's name: "done", "failed" or "panic".
func (r ReleaseReason) String() string {
	switch r {
	case ReleaseDone:
		return "done"
	case ReleaseFailed:
		return "failed"
	case ReleasePanic:
		return "panic"
	}
	return "unknown"
}

// Event is one thing an Observer is told. Fields that do not apply to its
// Kind are zero.
type Event struct {
	Kind EventKind
	// Policy and Mode are the Limiter's: bounded label values.
	Policy string
	Mode   Mode
	// Op is the store call of a StoreCall: "acquire", "release",
	// "extend" or "quota".
	Op string
	// Err is true for a StoreCall that failed.
	Err bool
	// Latency is how long a StoreCall took.
	Latency time.Duration
	// RetryAfter is how long a Rejected or DryRunRejected request's
	// client should wait.
	RetryAfter time.Duration
	// Hold is how long a Released key was held, and Reason why it was
	// released.
	Hold   time.Duration
	Reason ReleaseReason
	// Cost is what an Admitted Quota request was charged.
	Cost int
}

// Observe tells the policy's Observer of e, filling in the policy's name
// and mode. It does nothing without an Observer. Package guard reports the
// events only it sees (key errors, releases, dry runs) through it.
func (l *Limiter) Observe(ctx context.Context, e Event) {
	if l.p.Observer == nil {
		return
	}
	e.Policy, e.Mode = l.p.Name, l.p.Mode
	l.p.Observer.Observe(ctx, e)
}

// storeCall reports a store call that started at start (zero when no
// Observer is set, which skips the report) and failed with err.
func (l *Limiter) storeCall(ctx context.Context, op string, start time.Time, err error) {
	if start.IsZero() {
		return
	}
	l.Observe(ctx, Event{Kind: StoreCall, Op: op, Err: err != nil, Latency: time.Since(start)})
}

// callFailed returns err, or nil when the caller's ctx ended: a client that
// left is not a store failure (Stats.StoreErrors does not count it
// either), and must not set off an alert on store errors.
func callFailed(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return nil
	}
	return err
}

// startCall returns the time a store call starts, or the zero time when no
// Observer will be told of it.
func (l *Limiter) startCall() time.Time {
	if l.p.Observer == nil {
		return time.Time{}
	}
	return time.Now()
}
