package guard

import (
	"net/http"
	"strconv"

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
	return func(g *Guard) { g.legacyLimit = []string{strconv.Itoa(policyQuota(g))} }
}

// policyQuota is the q of the guard's RateLimit-Policy field.
func policyQuota(g *Guard) int {
	if g.mode == throttle.ModeQuota {
		return g.rate.Limit
	}
	return 1
}

// setLegacy sets the legacy fields of an admitted request, from the values
// its RateLimit field is made of (see ticket.setHeaders).
func (t *ticket) setLegacy(h http.Header) {
	g := t.g
	switch {
	case t.dryRun != nil:
		t.dryRun.setLegacy(h)
		return
	case t.hasQuota:
		r, secs := g.quotaValues(&t.quota)
		g.setLegacy(h, r, secs)
	case t.lease != nil || (t.hold != throttle.Hold{}):
		g.setLegacy(h, 0, g.heldSeconds())
	default: // unguarded: RateLimit-Policy alone
		h["X-Ratelimit-Limit"] = g.legacyLimit
	}
}

// setLegacy sets the legacy fields of a rejection, from the values its
// RateLimit field is made of (see Rejection.setHeaders and rejectedField).
func (rej *Rejection) setLegacy(h http.Header) {
	g := rej.g
	switch {
	case rej.Reason != ReasonContended:
		h["X-Ratelimit-Limit"] = g.legacyLimit
	case rej.Decision != nil:
		r, secs := g.quotaValues(rej.Decision)
		g.setLegacy(h, r, secs)
	default:
		g.setLegacy(h, 0, rej.retryAfter())
	}
}

// setLegacy sets the three fields for a RateLimit of r and t (none if secs
// is negative).
func (g *Guard) setLegacy(h http.Header, r int, secs int64) {
	h["X-Ratelimit-Limit"] = g.legacyLimit
	h["X-Ratelimit-Remaining"] = intField(int64(r))
	if secs >= 0 {
		h["X-Ratelimit-Reset"] = intField(secs)
	}
}

// intField is the field value of n, shared for small ones.
func intField(n int64) []string {
	return retryAfterFields.get(n)
}

// quotaValues returns the r and t of a Quota decision's RateLimit field,
// as quotaField formats them: t is none (-1) for a full quota.
func (g *Guard) quotaValues(d *store.Decision) (r int, secs int64) {
	secs = -1
	if wait := storekit.NextRefill(g.rate.Store(), *d); wait > 0 {
		secs = seconds(wait)
	}
	return d.Remaining, secs
}

// heldSeconds is the t of a key holder's RateLimit field (heldField): the
// TTL, none for an Exclusive hold, which lasts as long as the work.
func (g *Guard) heldSeconds() int64 {
	if g.mode == throttle.Exclusive {
		return -1
	}
	return seconds(g.window)
}
