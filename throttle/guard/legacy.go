package guard

import (
	"net/http"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

// LegacyHeaders adds the de facto X-RateLimit-Limit, X-RateLimit-Remaining
// and X-RateLimit-Reset fields beside the RateLimit and RateLimit-Policy
// fields of draft-ietf-httpapi-ratelimit-headers, for clients and gateways
// that read only those: X-RateLimit-Limit is the policy's q, and goes on
// every answer that carries RateLimit-Policy; X-RateLimit-Remaining and
// X-RateLimit-Reset are the RateLimit field's r and t (seconds until the
// quota is whole again or the key is free), and go with it, Reset omitted
// when RateLimit has no t. Where several policies are listed, they describe
// the first, the most restrictive. Without this option none of them is set
// and nothing is spent on them.
func LegacyHeaders() Option {
	return func(g *Guard) { g.legacy = true }
}

// setLegacy sets the legacy fields of an admitted request, from the values
// its RateLimit field is made of (see ticket.setHeaders).
func (t *ticket) setLegacy(h http.Header) {
	g := t.g
	switch {
	case t.dryRun != nil:
		t.dryRun.setLegacy(h)
	case t.plan != nil:
		t.plan.setLegacy(h, &t.quota, t.quotas)
	case g.policyField == nil:
	case t.lease != nil && g.holders > 1:
		setLegacy(h, g.holders, g.holders-t.lease.Holders(), -1)
	case t.lease != nil || (t.hold != throttle.Hold{}):
		setLegacy(h, 1, 0, g.heldSeconds())
	default: // unguarded: RateLimit-Policy alone
		h["X-Ratelimit-Limit"] = intField(int64(g.holders))
	}
}

// setLegacy sets the legacy fields of a rejection, from the values its
// RateLimit field is made of (see Rejection.setFields).
func (rej *Rejection) setLegacy(h http.Header) {
	g, p := rej.g, rej.quotaPlan()
	switch {
	case rej.Reason == ReasonContended && p != nil && rej.Decision != nil:
		p.setLegacy(h, rej.Decision, rej.decisions)
	case g.policyField == nil:
	case rej.Reason != ReasonContended && p != nil:
		h["X-Ratelimit-Limit"] = intField(int64(p.rates[0].Limit))
	case rej.Reason != ReasonContended:
		h["X-Ratelimit-Limit"] = intField(int64(g.holders))
	default:
		setLegacy(h, g.holders, 0, rej.retryAfter())
	}
}

// setLegacy sets the legacy fields of the decision d of the plan's one
// rate, or of the most restrictive of the decisions ds.
func (p *plan) setLegacy(h http.Header, d *store.Decision, ds []store.Decision) {
	i := 0
	if ds != nil {
		i = p.first(ds)
		d = &ds[i]
	}
	secs := int64(-1)
	if wait := storekit.NextRefill(p.rates[i].Store(), *d); wait > 0 {
		secs = seconds(wait)
	}
	setLegacy(h, p.rates[i].Limit, d.Remaining, secs)
}

// setLegacy sets the three fields for a policy of q whose RateLimit field
// says r and t (none if secs is negative).
func setLegacy(h http.Header, q, r int, secs int64) {
	h["X-Ratelimit-Limit"] = intField(int64(q))
	h["X-Ratelimit-Remaining"] = intField(int64(r))
	if secs >= 0 {
		h["X-Ratelimit-Reset"] = intField(secs)
	}
}

// intField is the field value of n, shared for small ones.
func intField(n int64) []string {
	return retryAfterFields.get(n)
}

// heldSeconds is the t of a key holder's RateLimit field (heldField): the
// TTL, none for an Exclusive hold, which lasts as long as the work.
func (g *Guard) heldSeconds() int64 {
	if g.mode == throttle.Exclusive {
		return -1
	}
	return seconds(g.window)
}
