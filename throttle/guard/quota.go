package guard

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

// Rates are what a Quota guard decides a request under: one rate, several
// rates decided as one (10 a second and 1,000 a day: a request refused by
// either is charged to neither), or a function of the request and its key
// that returns them (a plan's or a tier's limits). Give each of several
// rates its own Name: the RateLimit fields list them by it, most
// restrictive first.
type Rates interface {
	throttle.Rate | []throttle.Rate |
		func(r *http.Request, id string) throttle.Rate | func(r *http.Request, id string) []throttle.Rate
}

// Quota returns the Guard of q under rates, each Burst defaulting to Limit.
// It panics when q is nil or a fixed rate is not usable; a function's rate
// that is not usable answers its request 500.
func Quota[R Rates](q *throttle.Quota, rates R, opts ...Option) *Guard {
	if q == nil {
		panic("guard: Quota needs a non-nil *throttle.Quota")
	}
	c := q.Config()
	g := &Guard{quota: q, name: c.Name, mode: throttle.ModeQuota}
	switch v := any(rates).(type) {
	case throttle.Rate:
		g.plan = mustPlan(c.Name, []throttle.Rate{v})
	case []throttle.Rate:
		g.plan = mustPlan(c.Name, v)
	case func(*http.Request, string) throttle.Rate:
		if v == nil {
			panic("guard: Quota needs a non-nil rate function")
		}
		g.plans = &plans{name: c.Name, one: v}
	case func(*http.Request, string) []throttle.Rate:
		if v == nil {
			panic("guard: Quota needs a non-nil rate function")
		}
		g.plans = &plans{name: c.Name, all: v}
	}
	if g.plan != nil {
		g.window = g.plan.rates[0].Window
	}
	return g.init(c.Options, opts)
}

func mustPlan(name string, rates []throttle.Rate) *plan {
	p, err := newPlan(name, rates)
	if err != nil {
		panic("guard: " + err.Error())
	}
	return p
}

// plan is one set of rates a request is decided under, with the field
// values its answers repeat, built once per set.
type plan struct {
	rates  []throttle.Rate // Burst filled in
	names  []string        // in the fields: each rate's Name, or the Quota's
	burst  int             // the least Burst: a dearer request never fits
	policy []string        // RateLimit-Policy, the rates in their order
	items  []string        // each rate's RateLimit-Policy item
	fields []fieldCache    // each rate's RateLimit item, by r and t
}

func newPlan(name string, rates []throttle.Rate) (*plan, error) {
	if len(rates) == 0 || len(rates) > storekit.MaxLimits {
		return nil, invalidf("a Quota guard takes 1 to %d rates, not %d", storekit.MaxLimits, len(rates))
	}
	p := &plan{rates: make([]throttle.Rate, len(rates)), burst: -1}
	for i, r := range rates {
		r.Burst = r.Store().Burst
		if err := storekit.Check(r.Store(), 0); err != nil {
			return nil, err
		}
		for _, prev := range p.names {
			if prev == cmp.Or(r.Name, name) {
				return nil, invalidf("two rates named %q", prev)
			}
		}
		p.rates[i] = r
		p.names = append(p.names, cmp.Or(r.Name, name))
		if p.burst < 0 || r.Burst < p.burst {
			p.burst = r.Burst
		}
		p.items = append(p.items, policyItem(p.names[i], r))
		p.fields = append(p.fields, quotaFields(p.names[i], r.Burst))
	}
	p.policy = []string{strings.Join(p.items, ", ")}
	return p, nil
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{store.ErrInvalid}, args...)...)
}

// policyItem is a rate's RateLimit-Policy item.
func policyItem(name string, r throttle.Rate) string {
	b := strconv.AppendQuote(make([]byte, 0, 64), name)
	b = strconv.AppendInt(append(b, ";q="...), int64(r.Limit), 10)
	b = strconv.AppendInt(append(b, ";w="...), seconds(r.Window), 10)
	if r.Burst != r.Limit {
		b = strconv.AppendInt(append(b, ";throttle-burst="...), int64(r.Burst), 10)
	}
	return string(b)
}

// The Quota values cached: r within quotaEdge of 0 or of Burst (a spent
// quota, a user's first requests), t from none (-1) to quotaSeconds-2.
const (
	quotaEdge    = 64
	quotaSeconds = 16
)

func quotaFields(name string, burst int) fieldCache {
	return fieldCache{vals: make([]atomic.Pointer[[]string], min(burst+1, 2*quotaEdge)*quotaSeconds),
		format: func(n int64) string {
			r, t := int(n/quotaSeconds), n%quotaSeconds-1
			if r >= quotaEdge {
				r = burst - (r - quotaEdge)
			}
			return limitField(name, r, t)
		}}
}

// limit returns rate i's RateLimit item for d.
func (p *plan) limit(i int, d *store.Decision) []string {
	t := int64(-1)
	if wait := storekit.NextRefill(p.rates[i].Store(), *d); wait > 0 {
		t = seconds(wait)
	}
	return p.quotaLimit(i, d.Remaining, t)
}

// quotaLimit returns rate i's RateLimit item with r and t (none when -1).
func (p *plan) quotaLimit(i, r int, t int64) []string {
	burst := p.rates[i].Burst
	j := r
	if r >= quotaEdge {
		j = quotaEdge + burst - r
	}
	n := int64(j)*quotaSeconds + t + 1
	if r < 0 || r > burst || t < -1 || t+1 >= quotaSeconds || n >= int64(len(p.fields[i].vals)) {
		return []string{limitField(p.names[i], r, t)}
	}
	return p.fields[i].get(n)
}

// setFields sets the RateLimit fields of the decision d of a plan's one
// rate, or of the decisions ds, one per rate: then the rates most
// restrictive first (fewest requests left; ties as given).
func (p *plan) setFields(h http.Header, d *store.Decision, ds []store.Decision) {
	if ds == nil {
		h["Ratelimit-Policy"] = p.policy
		h["Ratelimit"] = p.limit(0, d)
		return
	}
	var buf [storekit.MaxLimits]int
	order := p.order(buf[:0], ds)
	if sorted(order) {
		h["Ratelimit-Policy"] = p.policy
	} else {
		items := make([]string, len(order))
		for k, i := range order {
			items[k] = p.items[i]
		}
		h["Ratelimit-Policy"] = []string{strings.Join(items, ", ")}
	}
	var field [256]byte
	b := field[:0]
	for k, i := range order {
		if k > 0 {
			b = append(b, ", "...)
		}
		b = append(b, p.limit(i, &ds[i])[0]...)
	}
	h["Ratelimit"] = []string{string(b)}
}

// order appends the rates' indices to dst, fewest requests left first.
func (p *plan) order(dst []int, ds []store.Decision) []int {
	for i := range ds {
		k := len(dst)
		dst = append(dst, i)
		for ; k > 0 && ds[dst[k-1]].Remaining > ds[i].Remaining; k-- {
			dst[k] = dst[k-1]
		}
		dst[k] = i
	}
	return dst
}

func sorted(order []int) bool {
	for k, i := range order {
		if k != i {
			return false
		}
	}
	return true
}

// first returns the index of the most restrictive rate of ds.
func (p *plan) first(ds []store.Decision) int {
	var buf [storekit.MaxLimits]int
	return p.order(buf[:0], ds)[0]
}

// violated returns the names of the rates that refused a request: those
// that would allow it later, or, for a peek, those spent.
func (p *plan) violated(ds []store.Decision) []string {
	var names []string
	for i, d := range ds {
		if d.RetryAfter > 0 {
			names = append(names, p.names[i])
		}
	}
	if names == nil {
		for i, d := range ds {
			if d.Remaining == 0 {
				names = append(names, p.names[i])
			}
		}
	}
	return names
}

// plans makes the plan of each request of a guard whose rates are a
// function, keeping the plans of the first maxPlans rates (one) or sets of
// up to four rates (all).
type plans struct {
	name string
	one  func(*http.Request, string) throttle.Rate
	all  func(*http.Request, string) []throttle.Rate
	mu   sync.RWMutex
	ones map[throttle.Rate]*plan
	alls map[[4]throttle.Rate]*plan
}

// maxPlans bounds the plans a guard keeps: a function that returns ever
// new rates gets its plans built per request instead.
const maxPlans = 256

func (ps *plans) get(r *http.Request, id string) (*plan, error) {
	if ps.one != nil {
		rate := ps.one(r, id)
		return cached(ps, &ps.ones, rate, func() []throttle.Rate { return []throttle.Rate{rate} })
	}
	rates := ps.all(r, id)
	var k [4]throttle.Rate
	if len(rates) > len(k) || len(rates) == 0 || rates[0] == (throttle.Rate{}) {
		return newPlan(ps.name, rates) // not cached: an empty rate stands for none
	}
	copy(k[:], rates)
	return cached(ps, &ps.alls, k, func() []throttle.Rate { return rates })
}

// cached returns the plan of the rates of k, kept in *m; rates returns
// them for a new plan.
func cached[K comparable](ps *plans, m *map[K]*plan, k K, rates func() []throttle.Rate) (*plan, error) {
	ps.mu.RLock()
	p := (*m)[k]
	ps.mu.RUnlock()
	if p != nil {
		return p, nil
	}
	p, err := newPlan(ps.name, rates())
	if err != nil {
		return nil, err
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if *m == nil {
		*m = map[K]*plan{}
	}
	if len(*m) < maxPlans {
		(*m)[k] = p
	}
	return p, nil
}

// beginQuota is begin for a Quota: it charges cost under the request's plan.
func (g *Guard) beginQuota(ctx context.Context, t *ticket, r *http.Request, id string, cost int, w http.ResponseWriter, write bool) (*Rejection, bool) {
	p := g.plan
	if p == nil {
		var err error
		if p, err = g.plans.get(r, id); err != nil {
			return g.newRejection(http.StatusInternalServerError, ReasonBadRate, err), false
		}
	}
	if cost < 0 || cost > p.burst {
		g.observe(ctx, throttle.Event{Kind: "key_error"})
		status := http.StatusBadRequest
		if cost > 0 {
			status = http.StatusRequestEntityTooLarge // it could never be allowed
		}
		return g.newRejection(status, ReasonBadCost, store.ErrInvalid), false
	}
	if len(p.rates) > 1 {
		return g.beginAll(ctx, t, p, id, cost, write)
	}
	d, err := g.quota.Admit(ctx, id, p.rates[0], cost)
	if err != nil {
		return g.refused(t, err, p, d, w, write)
	}
	t.g = g
	if d != nil {
		t.plan, t.quota = p, *d
		if g.countOnlyFailures {
			t.id, t.refund = id, cost
		}
	}
	return nil, false
}

// beginAll is beginQuota for a plan of several rates.
func (g *Guard) beginAll(ctx context.Context, t *ticket, p *plan, id string, cost int, write bool) (*Rejection, bool) {
	ds, err := g.quota.AdmitAll(ctx, id, p.rates, cost)
	if err != nil {
		rej := g.rejection(err)
		if ds != nil {
			i := p.first(ds)
			rej.plan, rej.decisions, rej.Decision = p, ds, &ds[i]
		}
		return g.reject(t, rej), false
	}
	t.g = g
	if ds != nil {
		t.plan, t.quotas = p, ds
		if g.countOnlyFailures {
			t.id, t.refund = id, cost
		}
	}
	return nil, false
}

// refund gives back what a CountOnlyFailures request was charged.
func (t *ticket) refundCharge(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	if len(t.plan.rates) == 1 {
		_, _ = t.g.quota.Allow(ctx, t.id, t.plan.rates[0], -t.refund)
		return
	}
	_, _ = t.g.quota.AllowAll(ctx, t.id, t.plan.rates, -t.refund)
}
