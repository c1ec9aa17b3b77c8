package overload

import (
	"context"
	"time"

	"github.com/go-throttle/throttle/throttle"
)

// waiter is a request waiting in the queue for a permit.
type waiter struct {
	older, newer *waiter
	since        int64 // when it began to wait
	deadline     int64 // when it is shed if it still waits
	start        int64 // when it was granted its permit
	with         int32 // requests in flight then, itself included
	state        waitState
	ready        chan struct{} // closed once state is granted or late
}

// waitState is where a waiter stands.
type waitState uint8

const (
	waiting waitState = iota
	granted           // it holds a permit
	late              // its deadline passed before a permit was free
)

// queue holds the waiters, oldest first, in a doubly linked list: a
// waiter leaves from either end (FIFO or LIFO) or from the middle (its
// context ended, its deadline passed) at no cost.
type queue struct {
	oldest, newest *waiter
	n              int
	// emptyAt is the last time the queue was empty: a queue that has not
	// been empty for an interval is standing, CoDel's sign of overload
	// rather than of a burst.
	emptyAt int64
}

// push adds w as the newest waiter.
func (q *queue) push(w *waiter, now int64) {
	if q.n == 0 {
		q.emptyAt = now
	}
	w.older = q.newest
	if q.newest != nil {
		q.newest.newer = w
	} else {
		q.oldest = w
	}
	q.newest = w
	q.n++
}

// remove takes w out of the queue.
func (q *queue) remove(w *waiter, now int64) {
	if w.older != nil {
		w.older.newer = w.newer
	} else {
		q.oldest = w.newer
	}
	if w.newer != nil {
		w.newer.older = w.older
	} else {
		q.newest = w.older
	}
	w.older, w.newer = nil, nil
	q.n--
	if q.n == 0 {
		q.emptyAt = now
	}
}

// standing reports whether the queue has not been empty for interval.
func (q *queue) standing(now, interval int64) bool {
	return q.n > 0 && now-q.emptyAt >= interval
}

// The queue holds at most queuePerPermit waiters per permit, and at least
// minQueue: more could not be served before their deadlines anyway.
const (
	queuePerPermit = 4
	minQueue       = 64
)

// The queue's CoDel figures: a waiter's deadline is the interval, or the
// target when the service showed overload within the last interval. The
// interval is minInterval, or the base latency when requests take longer.
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

// dispatch grants free permits to waiters, with l.mu held: the oldest
// first, or the newest first under overload (adaptive LIFO: the requests
// whose clients are likeliest still there). A waiter past its deadline is
// shed.
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
