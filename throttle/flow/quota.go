package flow

import (
	"context"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

// Rates are what a Quota job decides a call under: one rate, several rates
// decided as one (10 a second and 1,000 a day: a call refused by either
// is charged to neither), or a function of the call that returns them (a
// plan's or a tier's limits). Give each of several rates its own Name: the
// fields list them by it, most restrictive first.
type Rates interface {
	throttle.Rate | []throttle.Rate | func(Call) throttle.Rate | func(Call) []throttle.Rate
}

// Quota returns the Job of q under rates, each Burst defaulting to Limit.
// It panics when q is nil or a fixed rate is not usable; a function's rate
// that is not usable refuses its call with ReasonBadRate.
func Quota[R Rates](q *throttle.Quota, rates R, opts ...Option) *Job {
	if q == nil {
		panic("flow: Quota needs a non-nil *throttle.Quota")
	}
	c := q.Config()
	j := &Job{quota: q, name: c.Name, mode: throttle.ModeQuota}
	switch v := any(rates).(type) {
	case throttle.Rate:
		j.plan = mustPlan(c.Name, []throttle.Rate{v})
	case []throttle.Rate:
		j.plan = mustPlan(c.Name, v)
	case func(Call) throttle.Rate:
		j.plans = &plans{name: c.Name, one: v}
	case func(Call) []throttle.Rate:
		j.plans = &plans{name: c.Name, all: v}
	}
	if j.plans != nil && j.plans.one == nil && j.plans.all == nil {
		panic("flow: Quota needs a non-nil rate function")
	}
	if j.plan != nil {
		j.window = j.plan.rates[0].Window
	}
	return j.init(c.Options, opts)
}

func mustPlan(name string, rates []throttle.Rate) *plan {
	p, err := newPlan(name, rates)
	if err != nil {
		panic("flow: " + err.Error())
	}
	return p
}

// beginQuota is begin for a Quota: it charges cost under the call's plan.
func (j *Job) beginQuota(ctx context.Context, c *Call, cost int, p *Permit, ref *Refusal) bool {
	pl := j.plan
	if pl == nil {
		var err error
		if pl, err = j.plans.get(*c); err != nil {
			*ref = Refusal{Reason: ReasonBadRate, Limits: j.policy(), Err: err}
			return false
		}
	}
	if cost < 0 || cost > pl.burst {
		j.observe(ctx, throttle.Event{Kind: "key_error"})
		*ref = Refusal{Reason: ReasonBadCost, Limits: j.policy(), Err: costError{cost}}
		return false
	}
	lim := Limits{j: j, kind: decided, p: pl}
	var err error
	if len(pl.rates) > 1 {
		lim.ds, err = j.quota.AdmitAll(ctx, c.ID, pl.rates, cost)
		if lim.ds == nil {
			lim.kind = noLimits
		}
	} else {
		var d *store.Decision
		if d, err = j.quota.Admit(ctx, c.ID, pl.rates[0], cost); d != nil {
			lim.r, lim.t = d.Remaining, int32(pl.reset(0, d))
		} else {
			lim.kind = noLimits
		}
	}
	if err != nil {
		return j.refuse(err, lim, p, ref)
	}
	p.hold.job = j
	if lim.kind == noLimits { // failed open
		p.limits = j.policy()
		return true
	}
	p.limits = lim
	if j.onlyFailures {
		p.hold.id, p.hold.refund = c.ID, cost
	}
	return true
}

// refundCharge gives back what a CountOnlyFailures call was charged.
func (p *Permit) refundCharge(h hold) {
	ctx, rates := context.WithoutCancel(p.ctx), p.limits.p.rates
	if len(rates) == 1 {
		_, _ = h.job.quota.Allow(ctx, h.id, rates[0], -h.refund)
		return
	}
	_, _ = h.job.quota.AllowAll(ctx, h.id, rates, -h.refund)
}
