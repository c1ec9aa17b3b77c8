package flow

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

// plan is one set of rates a call is decided under, with the field
// values its answers repeat, built once per set.
type plan struct {
	rates  []throttle.Rate // Burst filled in
	names  []string        // in the fields: each rate's Name, or the Quota's
	burst  int             // the least Burst: a dearer call never fits
	policy []string        // RateLimit-Policy, the rates in their order
	items  []string        // each rate's RateLimit-Policy item
	fields []fieldCache    // each rate's RateLimit item, by r and t
}

func newPlan(name string, rates []throttle.Rate) (*plan, error) {
	if len(rates) == 0 || len(rates) > storekit.MaxLimits {
		return nil, invalidf("a Quota job takes 1 to %d rates, not %d", storekit.MaxLimits, len(rates))
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
// quota, a user's first calls), t from none (-1) to quotaSeconds-2.
const (
	quotaEdge    = 64
	quotaSeconds = 16
)

func quotaFields(name string, burst int) fieldCache {
	return fieldCache{vals: make([]atomic.Pointer[[]string], min(burst+1, 2*quotaEdge)*quotaSeconds), last: new(atomic.Pointer[lastField]),
		format: func(n int64) string {
			r, t := int(n/quotaSeconds), n%quotaSeconds-1
			if r >= quotaEdge {
				r = burst - (r - quotaEdge)
			}
			return limitField(name, r, t)
		}}
}

// reset is the t of rate i's RateLimit item for d, -1 for none.
func (p *plan) reset(i int, d *store.Decision) int64 {
	if wait := storekit.NextRefill(p.rates[i].Store(), *d); wait > 0 {
		return seconds(wait)
	}
	return -1
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
		return p.fields[i].other(p.names[i], r, t)
	}
	return p.fields[i].get(n)
}

// limitFields returns the RateLimit fields of the decisions ds, one per
// rate: the rates most restrictive first (fewest calls left; ties as
// given).
func (p *plan) limitFields(ds []store.Decision) (policy, limit []string) {
	var buf [storekit.MaxLimits]int
	order, policy := p.order(buf[:0], ds), p.policy
	if !slices.IsSorted(order) {
		items := make([]string, len(order))
		for k, i := range order {
			items[k] = p.items[i]
		}
		policy = []string{strings.Join(items, ", ")}
	}
	var field [256]byte
	b := field[:0]
	for k, i := range order {
		if k > 0 {
			b = append(b, ", "...)
		}
		b = append(b, p.quotaLimit(i, ds[i].Remaining, p.reset(i, &ds[i]))[0]...)
	}
	return policy, []string{string(b)}
}

// first returns the most restrictive rate of ds as limitFields gives it.
func (p *plan) first(ds []store.Decision) Limit {
	var buf [storekit.MaxLimits]int
	i := p.order(buf[:0], ds)[0]
	return p.limit(i, ds[i].Remaining, int32(p.reset(i, &ds[i])))
}

// limit returns rate i as a Limit with r and t (-1: none; r -1: no RateLimit).
func (p *plan) limit(i, r int, t int32) Limit {
	rate := p.rates[i]
	return Limit{Name: p.names[i], Quota: rate.Limit, Window: wholeSeconds(rate.Window), Remaining: r,
		Reset: max(time.Duration(t), 0) * time.Second}
}

// order appends the rates' indices to dst, fewest calls left first (ties
// as given).
func (p *plan) order(dst []int, ds []store.Decision) []int {
	for i := range ds {
		dst = append(dst, i)
	}
	slices.SortStableFunc(dst, func(a, b int) int { return cmp.Compare(ds[a].Remaining, ds[b].Remaining) })
	return dst
}

// violated returns the names of the rates that refused a call: those
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

// plans makes the plan of each call of a job whose rates are a function,
// keeping the plans of the first maxPlans rates (one) or sets of up to
// four rates (all).
type plans struct {
	name string
	one  func(Call) throttle.Rate
	all  func(Call) []throttle.Rate
	mu   sync.RWMutex
	ones map[throttle.Rate]*plan // a Rate key hashes faster than four
	alls map[[4]throttle.Rate]*plan
}

// maxPlans bounds the plans a job keeps: a function that returns ever
// new rates gets its plans built per call instead.
const maxPlans = 256

func (ps *plans) get(c Call) (*plan, error) {
	if ps.one != nil {
		rate := ps.one(c)
		return cached(ps, &ps.ones, rate, func() []throttle.Rate { return []throttle.Rate{rate} })
	}
	rates := ps.all(c)
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
