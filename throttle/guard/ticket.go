package guard

import (
	"context"
	"net/http"

	"github.com/go-throttle/throttle/throttle"
)

// ticket is an admitted request's hold on its key, which run ends as the
// mode says. The ticket of a request let through unguarded (the store
// failed open, a dry run) holds nothing.
type ticket struct {
	g           *Guard
	lease       *throttle.Lease
	hold        throttle.Hold // when g.holds
	stop        context.CancelFunc
	quota       throttle.Decision // if hasQuota (a pointer would be an allocation)
	hasQuota    bool
	id          string // and refund: what CountOnlyFailures gives back
	refund      int
	dryRun      *Rejection // that a dry run let through, for its fields
	capture     *Capture   // and fingerprint: a Replay key's first request's
	fingerprint string
}

// setHeaders sets the RateLimit fields of an admitted request: r=0 for a
// holder of its key (t=Window but for Exclusive), what remains of a quota,
// or only RateLimit-Policy for a request the store let through.
func (t *ticket) setHeaders(h http.Header) {
	if t.g == nil {
		return
	}
	h["Ratelimit-Policy"] = t.g.policyField
	switch {
	case t.dryRun != nil:
		h["Ratelimit"] = t.g.rejectedField(t.dryRun)
	case t.hasQuota:
		h["Ratelimit"] = t.g.quotaField(&t.quota)
	case t.lease != nil || t.hold.Held():
		h["Ratelimit"] = t.g.heldField
	}
}

// run runs next and then ends the hold with the status it reports, or as a
// failure when it panics or calls runtime.Goexit. Nothing is recovered.
func (t *ticket) run(ctx context.Context, next func() (status int)) {
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

// finish ends the hold: Cooldown keeps the key; Dedupe releases it when
// the handler failed; Replay does too, and records a success; Exclusive
// releases; CountOnlyFailures refunds a success. The release runs even if
// ctx was cancelled.
func (t *ticket) finish(ctx context.Context, status int, panicked bool) {
	g := t.g
	if g == nil {
		return
	}
	failed := panicked || g.failed(status)
	switch {
	case t.refund > 0:
		if !failed { // a failed refund leaves the charge: the safe side
			_, _ = g.quota.Allow(context.WithoutCancel(ctx), t.id, g.rate, -t.refund)
		}
		return
	case t.hold.Held():
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
	case g.mode == throttle.Cooldown:
		return
	case !failed && g.mode == throttle.ModeReplay:
		t.record(ctx)
		return
	case !failed && g.mode != throttle.Exclusive:
		return
	}
	// A lost lease or a failed release is the store log's business: the key
	// expires by itself.
	if err := t.lease.Release(ctx); err == nil && g.observer != nil {
		reason := throttle.ReleaseDone
		switch {
		case panicked:
			reason = throttle.ReleasePanic
		case failed:
			reason = throttle.ReleaseFailed
		}
		g.observe(ctx, throttle.Event{Kind: throttle.Released, Hold: t.lease.Held(), Reason: reason})
	}
}
