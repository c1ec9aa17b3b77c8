package guard

import (
	"strconv"
	"sync/atomic"

	"github.com/go-throttle/throttle/throttle"
)

// The fields of draft-ietf-httpapi-ratelimit-headers-11 are lists of one
// item: the policy's name (printable ASCII without '"' or '\', which throttle
// checks, so strconv.Quote gives the sf-string) with parameters.
// RateLimit-Policy: q=1;w=TTL for Dedupe, Cooldown and Replay;
// q=1;qu="concurrent-requests" for Exclusive; q=Limit;w=Window for a Quota,
// with throttle-burst when Burst is not Limit. No pk: it would let a client
// tell another's partition. RateLimit: r, what is available, for t, the -11
// effective window: r=0;t=TTL for a key's holder (no t under Exclusive),
// r=0;t=Retry-After when turned away, r=Remaining until one more refills
// under a Quota (no t when full). They are set before the handler runs, so a
// request that then frees its key or is refunded understates what is left.

func policyField(g *Guard) string {
	b := strconv.AppendQuote(make([]byte, 0, 64), g.name)
	switch g.mode {
	case throttle.Exclusive:
		return string(append(b, `;q=1;qu="concurrent-requests"`...))
	case throttle.ModeQuota:
		b = strconv.AppendInt(append(b, ";q="...), int64(g.rate.Limit), 10)
	default:
		b = append(b, ";q=1"...)
	}
	b = strconv.AppendInt(append(b, ";w="...), seconds(g.window), 10)
	if g.mode == throttle.ModeQuota && g.rate.Burst != g.rate.Limit {
		b = strconv.AppendInt(append(b, ";throttle-burst="...), int64(g.rate.Burst), 10)
	}
	return string(b)
}

// limitField returns a RateLimit value: r, and t unless it is negative.
func limitField(name string, r int, t int64) string {
	b := strconv.AppendQuote(make([]byte, 0, 48), name)
	b = strconv.AppendInt(append(b, ";r="...), int64(r), 10)
	if t >= 0 {
		b = strconv.AppendInt(append(b, ";t="...), t, 10)
	}
	return string(b)
}

// fieldCache holds the header values of 0 to len(vals)-1, each made by
// format on first use; others are made per call. Responses share the
// values: net/http only reads them, Header.Set replaces them and
// Header.Add's append copies them. It is safe for concurrent use.
type fieldCache struct {
	vals   []atomic.Pointer[[]string]
	format func(n int64) string
}

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

// retryAfterFields are the Retry-After values up to ten minutes.
var retryAfterFields = fieldCache{vals: make([]atomic.Pointer[[]string], 600),
	format: func(n int64) string { return strconv.FormatInt(n, 10) }}

// The Quota values cached: r within quotaEdge of 0 or of Burst (a user's
// first requests, a spent quota) and t from none (-1) to quotaSeconds-2.
const (
	quotaEdge    = 64
	quotaSeconds = 16
)

// initFields builds what the answers repeat.
func (g *Guard) initFields() {
	g.policyField = []string{policyField(g)}
	t := int64(-1) // an Exclusive hold lasts as long as the work
	if g.mode != throttle.Exclusive {
		t = seconds(g.window)
	}
	g.heldField = []string{limitField(g.name, 0, t)}
	g.contendedDetail = contendedDetail(g)
	g.contendedBody = (&Rejection{Status: g.status, Reason: ReasonContended, Detail: g.contendedDetail, g: g}).buildBody()
	g.rejectedFields = fieldCache{vals: make([]atomic.Pointer[[]string], 301),
		format: func(t int64) string { return limitField(g.name, 0, t) }}
	if g.mode != throttle.ModeQuota {
		return
	}
	g.quotaFields = fieldCache{vals: make([]atomic.Pointer[[]string], min(g.rate.Burst+1, 2*quotaEdge)*quotaSeconds),
		format: func(n int64) string {
			r, t := int(n/quotaSeconds), n%quotaSeconds-1
			if r >= quotaEdge {
				r = g.rate.Burst - (r - quotaEdge)
			}
			return limitField(g.name, r, t)
		}}
}

// rejectedField returns the RateLimit value of a request turned away for
// its key or quota.
func (g *Guard) rejectedField(rej *Rejection) []string {
	if rej.Decision != nil {
		return g.quotaField(rej.Decision)
	}
	return g.rejectedFields.get(rej.retryAfter())
}

// quotaField returns the RateLimit value of a Quota decision.
func (g *Guard) quotaField(d *throttle.Decision) []string {
	t := int64(-1)
	if wait := g.rate.NextRefill(*d); wait > 0 {
		t = seconds(wait)
	}
	return g.quotaLimit(d.Remaining, t)
}

func (g *Guard) quotaLimit(r int, t int64) []string {
	i := r
	if r >= quotaEdge {
		i = quotaEdge + g.rate.Burst - r
	}
	n := int64(i)*quotaSeconds + t + 1
	if r < 0 || r > g.rate.Burst || t < -1 || t+1 >= quotaSeconds || n >= int64(len(g.quotaFields.vals)) {
		return []string{limitField(g.name, r, t)}
	}
	return g.quotaFields.get(n)
}
