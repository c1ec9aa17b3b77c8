package throttle

import (
	"context"
	"sync/atomic"
	"time"
)

// probeInterval is how long FailOver stays on the fallback, once the store
// is down, before one caller tries the store again.
const probeInterval = time.Second

// downAfter is how many acquisitions in a row the store must fail before
// FailOver stops asking it: one slow reply would narrow every lock to one
// process for nothing.
const downAfter = 3

// health is what a limiter knows of its store.
type health struct {
	fails     atomic.Int32 // acquisitions in a row that the store failed
	downUntil atomic.Int64 // monoNow until which FailOver skips the store; 0 while trusted
	// failing is cleared, with one log line, by the next answer: operators
	// learn when the store is back.
	failing atomic.Bool
}

// failed records a store error (the caller logs it).
func (h *health) failed(l *limiter) {
	h.failing.Store(true)
	if h.fails.Add(1) >= downAfter && l.p.WhenStoreFails == FailOver {
		if h.downUntil.Swap(monoNow()+int64(probeInterval)) == 0 {
			l.observe(context.Background(), Event{Kind: "fallback_on"})
		}
	}
}

// answered records an answer of the store.
func (h *health) answered(l *limiter) {
	if h.fails.Load() != 0 {
		h.fails.Store(0)
	}
	if h.downUntil.Load() != 0 && h.downUntil.Swap(0) != 0 {
		l.observe(context.Background(), Event{Kind: "fallback_off"})
	}
	if h.failing.Load() && h.failing.Swap(false) {
		l.p.logger().Info("throttle: store answers again", "policy", l.p.Name)
	}
}

// skip reports whether FailOver should leave the store out now. Once the
// down period is over, exactly one caller probes the store.
func (h *health) skip() bool {
	until := h.downUntil.Load()
	if until == 0 {
		return false
	}
	now := monoNow()
	if now < until {
		return true
	}
	return !h.downUntil.CompareAndSwap(until, now+int64(probeInterval))
}
