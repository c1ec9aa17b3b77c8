package throttle

import (
	"context"
	"time"
)

// Observer is told of every decision and lease event of a limiter whose// Options.Observer it is, for metrics and traces: packages promthrottle
// (Prometheus) and otelthrottle (OpenTelemetry) implement it. Observe is
// called on the request's goroutine, synchronously, so it must be quick and
// must not block; ctx is the caller's context (for the request's span). An
// Event never carries a key, a token or a client address, so no observer
// can leak one. A limiter without an Observer pays nothing: not even the
// clock readings that time store calls.
type Observer interface {
	Observe(ctx context.Context, e Event)
}

// EventKind says what an Event reports:
//
//	Admitted        a request went ahead (Admit): holding its key, or charged Cost
//	Rejected        a request was turned away: key held or quota spent, for RetryAfter
//	DryRunRejected  under Options.DryRun, a request that would have been Rejected went ahead
//	FailedOpen      the store failed; the request went ahead unguarded
//	FailedClosed    the store failed; the request was turned away
//	Shed            the store answers, but this process waited for it too long or with too many calls: turned away (503)
//	Fallback        under FailOver, the Fallback store admitted the request
//	KeyError        the request's key or cost could not be built (4xx, store not asked)
//	StoreCall       one store call ended, after Latency; Op names it, Err says it failed
//	Released        a held key was given back after Hold, for Reason
//	Extended        a lease's refresher extended it
//	Lost            a held lease expired or was taken before it was released
//	FallbackOn      under FailOver, the limiter stopped asking the failing store
//	FallbackOff     the store answered again, and the limiter went back to it
//	Replayed        a Replay duplicate got the first request's recorded answer (Claim)
type EventKind uint8

// The kinds of Event; see EventKind.
const (
	Admitted EventKind = iota + 1
	Rejected
	DryRunRejected
	FailedOpen
	FailedClosed
	Fallback
	KeyError
	StoreCall
	Released
	Extended
	Lost
	FallbackOn
	FallbackOff
	Replayed
	Shed
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
	Replayed: "replayed", Shed: "shed",
}

// ReleaseReason says why a key was released: ReleaseDone when the work or
// handler returned and the mode releases then (Exclusive, Do);
// ReleaseFailed when it failed (guard.WithFailed, or Do's work returned an
// error) and Dedupe or Do gives the key back; ReleasePanic when it panicked.
type ReleaseReason uint8

// The reasons of a Released Event; see ReleaseReason.
const (
	ReleaseDone ReleaseReason = iota + 1
	ReleaseFailed
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

// Event is one thing an Observer is told; see EventKind for which fields
// each kind fills (the others are zero). Policy and Mode are the limiter's,
// so every label value is bounded. Op is "acquire", "release", "extend",
// "quota", "record" (Lease.Record) or "recorded" (a Replay duplicate's read). Latency times a StoreCall, Hold a Released key, and RetryAfter is
// what a Rejected (or DryRunRejected) request's client should wait.
type Event struct {
	Kind       EventKind
	Policy     string
	Mode       Mode
	Op         string
	Err        bool
	Latency    time.Duration
	RetryAfter time.Duration
	Hold       time.Duration
	Reason     ReleaseReason
	Cost       int
}

// observe tells the policy's Observer of e, filling in the policy's name
// and mode. It does nothing without an Observer.
func (l *limiter) observe(ctx context.Context, e Event) {
	if l.p.Observer == nil {
		return
	}
	e.Policy, e.Mode = l.p.Name, l.p.Mode
	l.p.Observer.Observe(ctx, e)
}

// storeCall reports a store call that started at start (zero when no
// Observer is set, which skips the report) and failed with err.
func (l *limiter) storeCall(ctx context.Context, op string, start time.Time, err error) {
	if start.IsZero() {
		return
	}
	l.observe(ctx, Event{Kind: StoreCall, Op: op, Err: err != nil, Latency: time.Since(start)})
}

// storeCallSince is storeCall for a call sent at the monotonic time sent
// (see monoNow).
func (l *limiter) storeCallSince(ctx context.Context, op string, sent int64, err error) {
	l.observe(ctx, Event{Kind: StoreCall, Op: op, Err: err != nil, Latency: time.Duration(monoNow() - sent)})
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
func (l *limiter) startCall() time.Time {
	if l.p.Observer == nil {
		return time.Time{}
	}
	return time.Now()
}
