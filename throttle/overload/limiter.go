package overload

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

// Config configures a Limiter. The zero Config is ready to use: nothing
// in it needs tuning.
type Config struct {
	// Name names the limiter in events: the policy label of promthrottle
	// and otelthrottle.
	Name string
	// MinLimit and MaxLimit bound the limit of requests in flight: 0 means
	// 1 and 1000. MinLimit is also the floor of a probe (see the package
	// documentation); raise it only if a service must never run fewer.
	MinLimit, MaxLimit int
	// Observer, if not nil, is told of each admission ("admitted", with
	// the time waited in the queue as Latency), each refusal ("shed",
	// with the Reason) and each end of a permit ("released", with the
	// time it was held as Hold), under Mode throttle.ModeOverload.
	Observer throttle.Observer
}

// Priority says how a request fares when the service is overloaded.
type Priority uint8

// The priorities.
const (
	// Normal requests wait in the queue for a permit when every permit
	// is taken, and are shed by their queueing delay.
	Normal Priority = iota
	// NeverShed requests (health checks, an operator's admin calls) are
	// admitted at once, whatever the load. They count as in flight, but
	// their latency does not teach the limit.
	NeverShed
	// ShedFirst requests (background jobs, anonymous traffic) go ahead
	// only when a permit is free and nobody waits; otherwise they are
	// shed at once (ReasonLimit), before any Normal request is.
	ShedFirst
)

// Limiter keeps a service out of overload, in one process, with no store:
// it admits requests up to a limit of requests in flight that follows
// their latency, makes the rest wait in a queue that sheds by queueing
// delay, and refuses what cannot be served in time. It is safe for
// concurrent use and runs no goroutine of its own.
type Limiter struct {
	name  string
	obs   throttle.Observer
	epoch time.Time

	mu       sync.Mutex
	inFlight int
	a        adaptive
	q        queue
	c        counts
	// overAt is the last sign of overload: a waiter shed, or a queue
	// that stood for an interval. For an interval after it, waiters get
	// the target as their deadline and the newest is served first.
	overAt int64
}

// counts are the counters of Stats, guarded by Limiter.mu.
type counts struct {
	admitted, limit, timeout, full, canceled uint64
}

// New returns a Limiter, or an error matching store.ErrInvalid when c's
// bounds are unusable.
func New(c Config) (*Limiter, error) {
	lo, hi := c.MinLimit, c.MaxLimit
	if lo == 0 {
		lo = 1
	}
	if hi == 0 {
		hi = max(1000, lo)
	}
	if lo < 1 || hi < lo {
		return nil, fmt.Errorf("%w: overload %q: limits %d to %d", store.ErrInvalid, c.Name, c.MinLimit, c.MaxLimit)
	}
	return &Limiter{name: c.Name, obs: c.Observer, epoch: time.Now(), a: newAdaptive(lo, hi), overAt: -int64(time.Hour)}, nil
}

// Name is the limiter's Config.Name: its policy in events and answers.
func (l *Limiter) Name() string { return l.name }

// Acquire returns a Permit for a request of priority p, waiting in the
// queue if every permit is taken. Its error is a *Refusal when the request
// is shed, or ctx.Err() when ctx ended while it waited: a client that gave
// up leaves the queue at once. The permit path allocates nothing.
func (l *Limiter) Acquire(ctx context.Context, p Priority) (Permit, error) {
	now := l.now()
	l.mu.Lock()
	if p == NeverShed || l.q.n == 0 && l.inFlight < l.a.permits() {
		l.inFlight++
		l.c.admitted++
		pm := Permit{l: l, start: now, with: int32(l.inFlight)}
		l.mu.Unlock()
		if p == NeverShed {
			pm.with = 0
		}
		l.observe(ctx, throttle.Event{Kind: "admitted"})
		return pm, nil
	}
	var r Reason
	switch {
	case p == ShedFirst:
		r = ReasonLimit
	case l.q.n >= max(minQueue, queuePerPermit*l.a.permits()):
		r = ReasonQueueFull
	default:
		return l.wait(ctx, now)
	}
	return Permit{}, l.shed(ctx, r)
}

// shed counts a refusal for r, with l.mu held, unlocks it and returns the
// refusal.
func (l *Limiter) shed(ctx context.Context, r Reason) *Refusal {
	switch r {
	case ReasonLimit:
		l.c.limit++
	case ReasonQueueTimeout:
		l.c.timeout++
	case ReasonQueueFull:
		l.c.full++
		l.overAt = l.now()
	}
	rf := &Refusal{Reason: r, RetryAfter: max(time.Second, time.Duration(l.interval()))}
	l.mu.Unlock()
	l.observe(ctx, throttle.Event{Kind: "shed", Reason: string(r), RetryAfter: rf.RetryAfter})
	return rf
}

// now returns the limiter's clock: nanoseconds since New, monotonic.
func (l *Limiter) now() int64 { return int64(time.Since(l.epoch)) }

// observe tells the Observer, if any, of e.
func (l *Limiter) observe(ctx context.Context, e throttle.Event) {
	if l.obs == nil {
		return
	}
	e.Policy, e.Mode = l.name, throttle.ModeOverload
	l.obs.Observe(ctx, e)
}
