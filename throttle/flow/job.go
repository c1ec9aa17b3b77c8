package flow

import (
	"context"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/overload"
)

// Job decides the calls of one limiter, made by Lock, Quota or Replay when
// an adapter is built. It is safe for concurrent use.
type Job struct {
	name         string
	mode         throttle.Mode
	window       time.Duration // a lock's or Replay's TTL, a fixed Quota's first window
	holders      int           // an Exclusive lock's LockConfig.Holders, at least 1
	dryRun       bool
	observer     throttle.Observer
	skip         func(Call) bool
	cost         func(Call) (int, error)
	onlyFailures bool

	lock             *throttle.Lock // one of the four is set
	quota            *throttle.Quota
	replay           *throttle.Replay
	overload         *overload.Limiter
	priority         func(Call) overload.Priority // an Overload's
	holds            bool                         // a lock's calls hold their keys with Lock.Hold
	fence, reentrant bool
	plan             *plan  // a Quota's rates when fixed,
	plans            *plans // else the function that gives them

	fields
}

// Option configures a Job.
type Option func(*Job)

// CountOnlyFailures makes a Quota charge only failed calls, such as wrong
// passwords. A call is charged before it runs and refunded when it
// succeeds, so that concurrent calls never exceed the quota together.
func CountOnlyFailures() Option { return func(j *Job) { j.onlyFailures = true } }

// WithCost makes a Quota charge each call what f says instead of 1 (the
// bytes of an upload). A cost above the least Burst, a negative one, or
// an error of f refuses the call with ReasonBadCost.
func WithCost(f func(Call) (int, error)) Option { return func(j *Job) { j.cost = f } }

// Skip lets the calls for which skip returns true go ahead unguarded: no
// store call and no Limits; they hold, record or are charged nothing. It
// serves allow-lists, health checks and internal callers. skip runs first
// for every call, so it should be cheap; nil skips nothing.
func Skip(skip func(Call) bool) Option { return func(j *Job) { j.skip = skip } }

// Lock returns the Job of l: each call holds its key as l's Mode says. It
// panics when l is nil.
func Lock(l *throttle.Lock, opts ...Option) *Job {
	if l == nil {
		panic("flow: Lock needs a non-nil *throttle.Lock")
	}
	c := l.Config()
	j := &Job{lock: l, name: c.Name, mode: c.Mode, window: c.TTL, fence: c.Fence, reentrant: c.Reentrant, holders: c.Holders}
	j.holds = c.Mode != throttle.Exclusive && !c.Fence && !c.Reentrant && c.Observer == nil
	return j.init(c.Options, opts)
}

// Replay returns the Job of r: a key's first call records its answer when
// it succeeds, and its duplicates get that answer (ReasonReplayed). It
// panics when r is nil.
func Replay(r *throttle.Replay, opts ...Option) *Job {
	if r == nil {
		panic("flow: Replay needs a non-nil *throttle.Replay")
	}
	c := r.Config()
	j := &Job{replay: r, name: c.Name, mode: throttle.ModeReplay, window: c.TTL, fence: c.Fence}
	return j.init(c.Options, opts)
}

func (j *Job) init(o throttle.Options, opts []Option) *Job {
	j.dryRun, j.observer = o.DryRun, o.Observer
	j.holders = max(j.holders, 1)
	for _, o := range opts {
		o(j)
	}
	if j.quota == nil {
		j.cost, j.onlyFailures = nil, false
	}
	j.initFields()
	return j
}

// Serve decides c and, if it goes ahead, runs next with its permit, whose
// hold ends with next's Outcome when next returns, or as failed when it
// panics or calls runtime.Goexit (nothing is recovered). next's Permit
// gives the context to run with and the Limits to send; its End does
// nothing, as Serve ends the hold. A call that does not go ahead never
// reaches next: Serve returns false and fills *ref, the caller's (so
// that no refusal is copied or allocated on the way), with the reason.
func (j *Job) Serve(ctx context.Context, c Call, ref *Refusal, next func(Permit) Outcome) bool {
	var p Permit
	if !j.begin(ctx, &c, &p, ref) {
		return false
	}
	ended := false
	defer func() {
		if !ended {
			p.End(Outcome{Failed: true, Panicked: true})
		}
	}()
	o := next(Permit{ctx: p.ctx, limits: p.limits, records: p.records})
	ended = true
	p.End(o)
	return true
}

// Begin decides c, as Serve does, for an adapter that must end the hold
// itself (a stream that outlives a call): a call that goes ahead gets a
// permit, whose End the adapter must call once the call ended; one that
// does not, ok false and the refusal.
func (j *Job) Begin(ctx context.Context, c Call) (p Permit, ref Refusal, ok bool) {
	ok = j.begin(ctx, &c, &p, &ref)
	return p, ref, ok
}

func (j *Job) begin(ctx context.Context, c *Call, p *Permit, ref *Refusal) bool {
	p.ctx = ctx
	if j.skip != nil && j.skip(*c) {
		return true
	}
	cost := 1
	if c.Err != nil {
		return j.badInput(c.Err, ReasonBadKey, ref)
	}
	if j.cost != nil {
		var err error
		if cost, err = j.cost(*c); err != nil {
			return j.badInput(err, ReasonBadCost, ref)
		}
	}
	switch {
	case j.overload != nil:
		return j.beginOverload(ctx, c, p, ref)
	case j.replay != nil:
		return j.beginReplay(ctx, c, p, ref)
	case j.quota != nil:
		return j.beginQuota(ctx, c, cost, p, ref)
	}
	return j.beginLock(ctx, c.ID, p, ref)
}

func (j *Job) observe(ctx context.Context, e throttle.Event) {
	if j.observer != nil {
		e.Policy, e.Mode = j.name, j.mode
		j.observer.Observe(ctx, e)
	}
}
