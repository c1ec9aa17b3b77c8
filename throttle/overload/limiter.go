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

// Permit is a request's place among those in flight. End it exactly once,
// when the request's work is done. The zero Permit is valid, and its End
// does nothing.
type Permit struct {
	l     *Limiter
	start int64
	with  int32 // requests in flight when granted, itself included; 0: do not sample
}

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

// The queue holds at most queuePerPermit waiters per permit, and at least
// minQueue: more could not be served before their deadlines anyway.
const (
	queuePerPermit = 4
	minQueue       = 64
)

// The queue's CoDel figures: a waiter's deadline is the interval, or the
// target once the queue has not been empty for an interval. The interval
// is at least minInterval, and the base latency when requests take longer.
const (
	minInterval    = 100 * time.Millisecond
	targetDivision = 20 // the target is the interval / targetDivision: 5 ms of 100 ms
)

// wait queues the caller, with l.mu held, until it is granted a permit, its
// deadline passes or ctx ends. It unlocks l.mu.
func (l *Limiter) wait(ctx context.Context, now int64) (Permit, error) {
	d := l.interval()
	if l.overloaded(now) {
		d /= targetDivision
	}
	w := &waiter{since: now, deadline: now + d, ready: make(chan struct{})}
	l.q.push(w, now)
	l.mu.Unlock()

	t := time.NewTimer(time.Duration(d))
	select {
	case <-w.ready:
	case <-ctx.Done():
	case <-t.C:
	}
	t.Stop()

	now = l.now()
	l.mu.Lock()
	if w.state == waiting {
		l.q.remove(w, now)
		w.state = late
	}
	if w.state == late {
		l.overAt = now
	}
	switch {
	case w.state == granted && ctx.Err() == nil:
		l.c.admitted++
		l.mu.Unlock()
		l.observe(ctx, throttle.Event{Kind: "admitted", Latency: time.Duration(w.start - w.since)})
		return Permit{l: l, start: w.start, with: w.with}, nil
	case ctx.Err() != nil:
		if w.state == granted {
			l.inFlight--
			l.dispatch(now)
		}
		l.c.canceled++
		l.mu.Unlock()
		return Permit{}, ctx.Err()
	}
	return Permit{}, l.shed(ctx, ReasonQueueTimeout)
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

// End gives the permit back once the request's work is done: its latency
// teaches the limit.
func (p Permit) End() { p.end(p.with > 0, "done") }

// Drop gives the permit back without teaching the limit: for a request
// whose latency says nothing of the service's (its client left and it
// stopped early, it panicked, it was answered from a cache).
func (p Permit) Drop() { p.end(false, "dropped") }

func (p Permit) end(sample bool, reason string) {
	l := p.l
	if l == nil {
		return
	}
	now := l.now()
	l.mu.Lock()
	l.inFlight--
	if sample {
		l.a.sample(now, p.start, int(p.with))
	}
	l.dispatch(now)
	l.mu.Unlock()
	if l.obs != nil {
		l.observe(context.Background(), throttle.Event{Kind: "released", Hold: time.Duration(now - p.start), Reason: reason})
	}
}

// dispatch grants free permits to waiters, with l.mu held: the oldest
// first, or the newest first once the queue stands (adaptive LIFO: under
// overload, the requests whose clients are likeliest still there). A
// waiter past its deadline is shed.
func (l *Limiter) dispatch(now int64) {
	if l.q.n == 0 {
		return
	}
	lifo := l.overloaded(now)
	for l.q.n > 0 && l.inFlight < l.a.permits() {
		w := l.q.oldest
		if lifo {
			w = l.q.newest
		}
		l.q.remove(w, now)
		if now >= w.deadline {
			w.state = late
		} else {
			l.inFlight++
			w.state, w.start, w.with = granted, now, int32(l.inFlight)
		}
		close(w.ready)
	}
}

// overloaded reports whether the service showed a sign of overload in the
// last interval, with l.mu held; a queue that stands for an interval is
// one.
func (l *Limiter) overloaded(now int64) bool {
	interval := l.interval()
	if l.q.standing(now, interval) {
		l.overAt = now
	}
	return now-l.overAt < interval
}

// interval returns the queue's CoDel interval, in nanoseconds.
func (l *Limiter) interval() int64 { return max(int64(minInterval), l.a.base) }

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

// Stats is a snapshot of a Limiter.
type Stats struct {
	// Limit is how many requests may be in flight now; InFlight how many
	// are, NeverShed ones included; Queued how many wait.
	Limit, InFlight, Queued int
	// QueueDelay is how long the oldest waiting request has waited.
	QueueDelay time.Duration
	// BaseLatency is the latency the limit aims near: the median of
	// requests that did not wait for each other (0 until measured).
	BaseLatency time.Duration
	// Admitted counts permits granted; ShedLimit, ShedQueueTimeout and
	// ShedQueueFull the requests shed, by Reason; Canceled the waiters
	// whose context ended first.
	Admitted, ShedLimit, ShedQueueTimeout, ShedQueueFull, Canceled uint64
}

// Stats returns a snapshot of l.
func (l *Limiter) Stats() Stats {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	s := Stats{
		Limit: l.a.permits(), InFlight: l.inFlight, Queued: l.q.n, BaseLatency: time.Duration(l.a.base),
		Admitted: l.c.admitted, ShedLimit: l.c.limit, ShedQueueTimeout: l.c.timeout, ShedQueueFull: l.c.full,
		Canceled: l.c.canceled,
	}
	if l.q.oldest != nil {
		s.QueueDelay = time.Duration(now - l.q.oldest.since)
	}
	return s
}
