package overload

import (
	"context"
	"time"

	"github.com/go-throttle/throttle/throttle"
)

// Permit is a request's place among those in flight. End it exactly once,
// when the request's work is done. The zero Permit is valid, and its End
// does nothing.
type Permit struct {
	l     *Limiter
	start int64
	with  int32 // requests in flight when granted, itself included; 0: do not sample
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
	if sample {
		l.a.sample(now, p.start, int(p.with), l.inFlight)
	}
	l.inFlight--
	l.dispatch(now)
	l.mu.Unlock()
	if l.obs != nil {
		l.observe(context.Background(), throttle.Event{Kind: "released", Hold: time.Duration(now - p.start), Reason: reason})
	}
}
