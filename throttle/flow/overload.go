package flow

import (
	"context"
	"errors"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/overload"
)

// Overload returns the Job of l: each call waits for one of l's permits,
// or is refused with ReasonOverloaded when l sheds it. The call's ID is
// not used (overload is per process, not per user); priority, when not
// nil, says how each call fares (health checks never shed, background
// work shed first). It panics when l is nil.
func Overload(l *overload.Limiter, priority func(Call) overload.Priority, opts ...Option) *Job {
	if l == nil {
		panic("flow: Overload needs a non-nil *overload.Limiter")
	}
	j := &Job{overload: l, priority: priority, name: l.Name(), mode: throttle.ModeOverload}
	return j.init(throttle.Options{}, opts)
}

func (j *Job) beginOverload(ctx context.Context, c *Call, p *Permit, ref *Refusal) bool {
	prio := overload.Normal
	if j.priority != nil {
		prio = j.priority(*c)
	}
	permit, err := j.overload.Acquire(ctx, prio)
	if err == nil {
		p.hold = hold{job: j, shed: permit}
		return true
	}
	var shed *overload.Refusal
	if errors.As(err, &shed) {
		*ref = Refusal{Reason: ReasonOverloaded, RetryAfter: max(shed.RetryAfter.Round(time.Second), time.Second), Err: err}
	} else {
		*ref = Refusal{Reason: ReasonCanceled, Err: err}
	}
	return false
}

// endOverload gives the permit back: its latency teaches the limit unless
// the call panicked, which says nothing of the service's speed.
func (h *hold) endOverload(o Outcome) {
	if o.Panicked {
		h.shed.Drop()
	} else {
		h.shed.End()
	}
}
