package throttle

import (
	"context"
	"time"
)

// Observer is told of every decision and lease event of a limiter whose
// Options.Observer it is: packages promthrottle and otelthrottle implement
// it. Observe is called synchronously on the request's goroutine, so it
// must be quick and must not block; ctx is the caller's context. An Event
// never carries a key, a token or a client address, so no observer can leak
// one.
type Observer interface {
	Observe(ctx context.Context, e Event)
}

// Event is one thing an Observer is told. Kind says what happened, and is
// also the outcome label of the Prometheus and OpenTelemetry instruments:
//
//	"admitted"          a request went ahead: holding its key, or charged Cost
//	"rejected"          a request was turned away (key held, quota spent) for RetryAfter
//	"dry_run_rejected"  under Options.DryRun, a request that would have been rejected went ahead
//	"failed_open"       the store failed; the request went ahead unguarded
//	"failed_closed"     the store failed; the request was turned away
//	"shed"              the store answers, but this process waited too long or with too many calls (503);
//	                    under ModeOverload, the process itself is overloaded: Reason says why
//	"full"              the store answers, but had no room for the request's key (503)
//	"fallback"          under FailOver, the Fallback store admitted the request
//	"key_error"         the request's key or cost could not be built (4xx, store not asked)
//	"replayed"          a Replay duplicate got the first request's recorded answer
//	"store_call"        one store call ended after Latency; Op names it, Err says it failed
//	"released"          a held key was given back after Hold; Reason is "done", "failed" or "panic"
//	                    ("done" or "dropped" for an overload permit)
//	"extended"          a lease's refresher extended it
//	"lost"              a held lease expired or was taken before it was released
//	"fallback_on"       under FailOver, the limiter stopped asking the failing store
//	"fallback_off"      the store answered again, and the limiter went back to it
//	"near_hit"          the Redis store's near cache refused an attempt with no store call (its outcome follows)
//
// Fields a kind does not use are zero. Every label value is bounded. Op is
// "acquire", "release", "extend", "quota", "record", "recorded" or "delete".
type Event struct {
	Kind       string
	Policy     string
	Mode       Mode
	Op         string
	Err        bool
	Latency    time.Duration
	RetryAfter time.Duration
	Hold       time.Duration
	Reason     string
	Cost       int
}

// observe tells the policy's Observer, if any, of e.
func (l *limiter) observe(ctx context.Context, e Event) {
	if l.p.Observer == nil {
		return
	}
	e.Policy, e.Mode = l.p.Name, l.p.Mode
	l.p.Observer.Observe(ctx, e)
}

// nearHit counts a refusal the store's near cache answered, and tells the
// Observer.
func (l *limiter) nearHit(ctx context.Context) {
	l.stats.nearHits.Add(1)
	l.observe(ctx, Event{Kind: "near_hit"})
}

// storeCall tells the Observer of a call of op to the store, sent at the
// monoNow stamp sent (0: not timed), that failed with err.
func (l *limiter) storeCall(ctx context.Context, op string, sent int64, err error) {
	if sent == 0 || l.p.Observer == nil {
		return
	}
	l.observe(ctx, Event{Kind: "store_call", Op: op, Err: err != nil, Latency: time.Duration(monoNow() - sent)})
}

// callFailed returns err, or nil when the caller's ctx ended: a client that
// left must not set off an alert on store errors.
func callFailed(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return nil
	}
	return err
}

// since returns the stamp a store call starts at, or 0 without an Observer.
func (l *limiter) since() int64 {
	if l.p.Observer == nil {
		return 0
	}
	return monoNow()
}
