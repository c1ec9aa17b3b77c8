package guard

import (
	"strconv"
	"sync/atomic"
)

// What the guard answers on the hot paths repeats: a Dedupe guard turns
// away every duplicate with the same problem body, the same
// RateLimit-Policy, and Retry-After and RateLimit values that take one of a
// few dozen values (whole seconds up to the window). Building them per
// request (strconv.AppendQuote of the detail text, a []string per header)
// cost most of a rejection, so they are built once: the body when the
// Guard is made, the per-value fields on first use (see fieldCache).
//
// A header map holds a []string per field, which the caches share between
// responses, as Write already shared its fixed values. net/http only reads
// them; Header.Set replaces the slice, and Header.Add's append copies it
// (the shared slices are full), so middleware that changes a field leaves
// the shared one alone. Only assigning to an element in place would not.

// fieldCache holds the header values of the integers 0 to len(vals)-1, each
// made by format on first use; larger or negative ones are made per call.
// It is safe for concurrent use: two callers may both make a missing value,
// and either one's is kept.
type fieldCache struct {
	vals   []atomic.Pointer[[]string]
	format func(n int64) string
}

func newFieldCache(n int, format func(n int64) string) *fieldCache {
	return &fieldCache{vals: make([]atomic.Pointer[[]string], n), format: format}
}

// get returns the header value of n.
func (c *fieldCache) get(n int64) []string {
	if n < 0 || n >= int64(len(c.vals)) {
		return []string{c.format(n)}
	}
	if v := c.vals[n].Load(); v != nil {
		return *v
	}
	v := []string{c.format(n)}
	c.vals[n].Store(&v)
	return v
}

// retryAfterFields are the Retry-After values up to ten minutes, for every
// guard (4.8 KB).
var retryAfterFields = newFieldCache(600, func(n int64) string { return strconv.FormatInt(n, 10) })

// cachedLimitSeconds bounds the RateLimit values of rejections a Guard
// keeps: t up to five minutes, covering the windows of Dedupe and Cooldown
// policies (2.4 KB per Guard).
const cachedLimitSeconds = 300

// cached returns the Guard that made rej, whose cached answers are rej's
// too; nil for a rejection made elsewhere.
func (rej *Rejection) cached() *Guard {
	return rej.g
}

// body returns buildBody(rej), shared with other responses when it is the
// Guard's cached answer to a duplicate: the caller must not change it.
func body(rej *Rejection) []byte {
	if g := rej.cached(); g != nil && rej.Reason == ReasonContended && rej.Status == g.p.status {
		return g.contendedBody
	}
	return buildBody(rej)
}

// quotaEdge is how many values of r at each end of a Quota's range
// quotaFields caches: a user's first requests have Burst-1, Burst-2, ...
// left, a spent quota 0, 1, ..., and those are most requests' answers.
const quotaEdge = 64

// quotaSeconds bounds the values of t that quotaFields caches: 1 to
// quotaSeconds-2 seconds, and none (-1).
const quotaSeconds = 16

// quotaFields caches the RateLimit values of a Quota guard's admitted
// requests, "name";r=R;t=T, by r and t: r within quotaEdge of 0 or of
// Burst, t up to the window's seconds (at most quotaSeconds-2, or none).
// Other values are made per call. The cache takes at most 2 × quotaEdge ×
// quotaSeconds entries (16 KB) per guard.
type quotaFields struct {
	name      string
	burst, tN int
	c         *fieldCache
}

func newQuotaFields(p *policy) *quotaFields {
	q := &quotaFields{name: p.name, burst: p.rate.Burst, tN: int(min(seconds(p.window), quotaSeconds-2)) + 2}
	rN := min(p.rate.Burst+1, 2*quotaEdge)
	q.c = newFieldCache(rN*q.tN, func(n int64) string {
		r, t := int(n)/q.tN, n%int64(q.tN)-1
		if r >= quotaEdge {
			r = q.burst - (r - quotaEdge)
		}
		return limitField(q.name, r, t)
	})
	return q
}

// get returns the RateLimit value of remaining r and t seconds (-1: none).
func (q *quotaFields) get(r int, t int64) []string {
	i := r
	if r >= quotaEdge {
		i = quotaEdge + q.burst - r // below quotaEdge only if r > burst
	}
	n := int64(i)*int64(q.tN) + t + 1
	if r < 0 || r > q.burst || t < -1 || t+1 >= int64(q.tN) || n >= int64(len(q.c.vals)) {
		return []string{limitField(q.name, r, t)}
	}
	return q.c.get(n)
}
