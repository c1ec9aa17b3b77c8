package guard

import (
	"context"
	"net/http"

	"github.com/go-throttle/throttle/throttle"
)

// ticket is an admitted request's hold on its key, which run ends as the
// policy's mode says. A ticket of a request let through because the store
// failed open holds nothing, and ending it does nothing.
type ticket struct {
	g     *Guard
	lease *throttle.Lease
	// hold is the key of a lock that holds with Lock.Hold, when lease is
	// nil.
	hold throttle.Hold
	stop context.CancelFunc
	// quota is the decision that admitted a Quota request, when hasQuota
	// is set (not a pointer: that would cost an allocation per request).
	quota    throttle.Decision
	hasQuota bool
	// id and refund are set under CountOnlyFailures: the cost to give
	// back to id's quota when the request succeeds.
	id     string
	refund int
	// dryRun is the rejection a request let through under DryRun
	// would have had, for its RateLimit fields.
	dryRun *Rejection
	// capture and fingerprint are set for the first request of a Replay
	// key: what it answers, and its body's fingerprint, to record.
	capture     *Capture
	fingerprint string
}

// setHeaders sets the RateLimit-Policy and RateLimit fields of
// draft-ietf-httpapi-ratelimit-headers-11 on an admitted request's
// response, so that clients can pace themselves before they are turned
// away. Call it before the handler writes its header. A request holding
// its key gets r=0 (nothing more is available to it) and, in Dedupe and
// Cooldown, t=Window; a Quota request gets what remains and how long until
// more is (see SetHeaders for rejections). A request let through because
// the store failed open gets RateLimit-Policy alone: its quota is unknown.
func (t *ticket) setHeaders(h http.Header) {
	if t.g == nil {
		return
	}
	h["Ratelimit-Policy"] = t.g.policyField
	switch {
	case t.dryRun != nil:
		h["Ratelimit"] = rejectedLimit(t.dryRun, t.dryRun.cached())
	case t.hasQuota:
		h["Ratelimit"] = t.g.quotaField(&t.quota)
	case t.lease != nil || t.hold.Held():
		h["Ratelimit"] = t.g.heldField
	}
}

// finish ends the request's hold once the handler has returned with status
// (or panicked): Cooldown keeps the key for its window; Dedupe releases it
// when the handler failed (WithFailed) or panicked; Replay does the same
// and, when the handler succeeded, records its captured response for the
// key's duplicates; Exclusive stops refreshing and releases; a Quota under
// CountOnlyFailures gives the cost back when the handler succeeded. The
// release runs even if ctx was cancelled.
func (t *ticket) finish(ctx context.Context, status int, panicked bool) {
	if t.g == nil {
		return
	}
	failed := panicked || t.g.p.failed(status)
	switch {
	case t.refund > 0:
		if !failed {
			// A refund that fails leaves the charge in place: the user
			// pays for one success, the safe side of a login limit.
			_, _ = t.g.quota.Allow(context.WithoutCancel(ctx), t.id, t.g.p.rate, -t.refund)
		}
		return
	case t.hold.Held():
		if failed && t.g.p.mode == throttle.Dedupe {
			_ = t.hold.Release(ctx) // no Observer to tell: see Guard.holds
		}
		return
	case t.lease == nil:
		return
	case t.stop != nil:
		t.stop()
	}
	if t.g.p.mode == throttle.Cooldown || (!failed && t.keeps(ctx)) {
		return // Cooldown keeps its key whatever happened
	}
	// A lost lease or a failed release is not the client's business: the
	// key then expires by itself, which the store error log already shows.
	if err := t.lease.Release(ctx); err == nil && t.g.p.observer != nil {
		t.g.observe(ctx, throttle.Event{Kind: "released", Hold: t.lease.Held(), Reason: releaseReason(failed, panicked)})
	}
}

// keeps reports whether a request that succeeded keeps its key (Dedupe,
// Cooldown, Replay, the last after recording its response) rather than
// releasing it (Exclusive).
func (t *ticket) keeps(ctx context.Context) bool {
	switch t.g.p.mode {
	case throttle.Exclusive:
		return false
	case throttle.ModeReplay:
		t.record(ctx)
	}
	return true
}

// releaseReason says why a key is released.
func releaseReason(failed, panicked bool) string {
	switch {
	case panicked:
		return "panic"
	case failed:
		return "failed"
	}
	return "done"
}

// run runs the rest of the request and then ends the hold, as finish
// does, with the status next reports. When next panics or calls
// runtime.Goexit, the hold ends as a failure. Nothing is recovered: the panic
// keeps unwinding with its own value and stack, to http.Server or the
// framework's recovery middleware, once the key is released.
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
