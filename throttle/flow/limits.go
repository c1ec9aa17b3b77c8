package flow

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

// Limits is what the RateLimit-Policy and RateLimit fields of
// draft-ietf-httpapi-ratelimit-headers-11 say of a call: the policies
// that decided it and what they leave. Every transport sends the same
// values (HTTP header fields, gRPC header metadata). The zero Limits says
// nothing.
type Limits struct {
	j    *Job
	p    *plan            // a Quota's rates,
	ds   []store.Decision // and the decision of each when several
	r    int              // else RateLimit's r,
	t    int32            // and t (-1: none), of a lock or a Quota's one rate
	kind limitsKind
}

type limitsKind uint8

const (
	noLimits   limitsKind = iota
	policyOnly            // RateLimit-Policy alone: nothing held or decided
	lockLimit             // a lock's key held or refused: r and t
	decided               // a Quota's decision under p: r and t, or ds
)

// Limit is one policy of Limits, with the values its fields give.
type Limit struct {
	Name string
	// Quota is the policy's q: calls per Window, or at once without one.
	Quota int
	// Window is the policy's w in whole seconds; 0 for concurrent calls.
	Window time.Duration
	// Remaining is the RateLimit field's r; -1 when that field is not sent.
	Remaining int
	// Reset is the RateLimit field's t in whole seconds; 0 when it has none.
	Reset time.Duration
}

// Fields returns the values of the RateLimit-Policy and RateLimit fields,
// nil for a field not sent. They are shared: send or copy them, never
// change them.
func (l *Limits) Fields() (policy, limit []string) {
	switch {
	case l.kind == noLimits:
		return nil, nil
	case l.kind == decided && l.ds != nil:
		return l.p.limitFields(l.ds)
	case l.kind == decided:
		return l.p.policy, l.p.quotaLimit(0, l.r, int64(l.t))
	case l.kind == lockLimit && l.j.policyField != nil:
		return l.j.policyField, l.j.lockFields(l.r, int64(l.t))
	}
	return l.j.policyField, nil
}

// First returns the first policy of the fields, the most restrictive: the
// values a page for a person ("2 of 10 left") or the legacy X-RateLimit
// fields give. Its Name is "" when the fields say nothing.
func (l *Limits) First() Limit {
	j := l.j
	switch {
	case l.kind == noLimits:
		return Limit{}
	case l.kind == decided && l.ds != nil:
		return l.p.first(l.ds)
	case l.kind == decided:
		return l.p.limit(0, l.r, l.t)
	case l.kind == policyOnly && j.plan != nil:
		return j.plan.limit(0, -1, -1)
	case j.policyField == nil:
		return Limit{}
	}
	lim := Limit{Name: j.name, Quota: j.holders, Remaining: -1}
	if j.mode != throttle.Exclusive {
		lim.Window = wholeSeconds(j.window)
	}
	if l.kind == lockLimit {
		lim.Remaining, lim.Reset = l.r, max(time.Duration(l.t), 0)*time.Second
	}
	return lim
}

// lockLimits is the Limits of a lock's call: r and t (-1: none).
func (j *Job) lockLimits(r int, t int64) Limits {
	return Limits{j: j, kind: lockLimit, r: r, t: int32(t)}
}

// wholeSeconds is d as the fields give it: whole seconds, rounded up.
func wholeSeconds(d time.Duration) time.Duration { return time.Duration(seconds(d)) * time.Second }

// policy is the Limits of a call of j that holds nothing and was not
// decided: RateLimit-Policy alone.
func (j *Job) policy() Limits { return Limits{j: j, kind: policyOnly} }

// The field values a job's answers repeat, built once.
type fields struct {
	names       []string // the job's name alone, for Violated
	policyField []string // nil for a Quota whose rates are a function
	heldT       int64    // a holder's t: the window, none (-1) for Exclusive
	heldField   []string // a holder's RateLimit value
	locks       fieldCache
}

// maxT is the largest t of a lock's RateLimit values cached.
const maxT = 300

func (j *Job) initFields() {
	j.names = []string{j.name}
	switch {
	case j.plan != nil:
		j.policyField = j.plan.policy
	case j.overload != nil: // no quota of the user's to state
	case j.quota == nil:
		b := strconv.AppendQuote(make([]byte, 0, 64), j.name)
		if j.mode == throttle.Exclusive {
			b = strconv.AppendInt(append(b, ";q="...), int64(j.holders), 10)
			b = append(b, `;qu="concurrent-requests"`...)
		} else {
			b = strconv.AppendInt(append(b, ";q=1;w="...), seconds(j.window), 10)
		}
		j.policyField = []string{string(b)}
	}
	j.heldT = -1 // an Exclusive hold lasts as long as the work
	if j.mode != throttle.Exclusive {
		j.heldT = seconds(j.window)
	}
	j.heldField = []string{limitField(j.name, 0, j.heldT)}
	j.locks = fieldCache{vals: make([]atomic.Pointer[[]string], (j.holders+1)*(maxT+2)),
		format: func(n int64) string { return limitField(j.name, int(n/(maxT+2)), n%(maxT+2)-1) }}
}

// lockFields is a lock's RateLimit value of r and t.
func (j *Job) lockFields(r int, t int64) []string {
	if r == 0 && t == j.heldT {
		return j.heldField // every admitted call's
	}
	if r < 0 || r > j.holders || t < -1 || t > maxT {
		return []string{limitField(j.name, r, t)}
	}
	return j.locks.get(int64(r)*(maxT+2) + t + 1)
}

// The fields are one item each: the policy's name (strconv.Quote makes the
// sf-string of a name throttle allows) with parameters, never pk, which
// would tell a client another's partition. RateLimit's t is the effective
// window: none for an Exclusive holder or a full Quota. Sent before the
// call runs, they understate what a call that then frees its key or is
// refunded leaves.

// limitField returns a RateLimit value: r, and t unless it is negative.
func limitField(name string, r int, t int64) string {
	b := strconv.AppendQuote(make([]byte, 0, 48), name)
	b = strconv.AppendInt(append(b, ";r="...), int64(r), 10)
	if t >= 0 {
		b = strconv.AppendInt(append(b, ";t="...), t, 10)
	}
	return string(b)
}

// fieldCache holds the field values of 0 to len(vals)-1, made by format
// on first use and shared, and the last value made outside them.
type fieldCache struct {
	vals   []atomic.Pointer[[]string]
	format func(n int64) string
	last   *atomic.Pointer[lastField]
}

// lastField is a RateLimit item outside a fieldCache's values, by r and t.
type lastField struct {
	r int
	t int64
	v [1]string
}

// other returns the RateLimit item of name with r and t, which the values
// do not hold (a t of 15 s or more: a rate slower than one unit in 15 s):
// the last one made, when r and t are its, else a new one, kept as the
// last. The refusals of a flood on one key repeat it within a second
// (fiberadapter's BenchmarkMiddleware/rejected measures what it saves).
func (c *fieldCache) other(name string, r int, t int64) []string {
	if l := c.last.Load(); l != nil && l.r == r && l.t == t {
		return l.v[:]
	}
	l := &lastField{r: r, t: t, v: [1]string{limitField(name, r, t)}}
	c.last.Store(l)
	return l.v[:]
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
