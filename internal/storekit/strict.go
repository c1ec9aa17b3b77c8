package storekit

import (
	"fmt"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// A strict rate (store.Rate.Strict) is a sliding window kept as a log: a
// key holds one timestamp per admitted unit of cost in the last Window,
// and a request of cost n is allowed when the log, with n more, holds at
// most Limit. An admission at a counts over [a, a+Window): no half-open
// interval of one Window ever holds more than Limit. strict.lua is the
// same decision, step for step.

// MaxStrict is the largest Limit of a strict rate: its log holds up to
// Limit timestamps per key (docs/stores.md gives the memory).
const MaxStrict = 10000

// StrictSuffix ends the key of a strict rate: the key of the smooth rate of
// the same name with this after it. The two kinds keep different data, and
// a plan that turns a rate strict starts its log afresh.
const StrictSuffix = ":strict"

// checkStrict returns an error matching store.ErrInvalid for a strict rate
// no store takes.
func checkStrict(r store.Rate) error {
	switch {
	case !r.Strict:
	case r.Burst != r.Limit:
		return fmt.Errorf("%w: strict quota burst %d is not its limit %d", store.ErrInvalid, r.Burst, r.Limit)
	case r.Limit > MaxStrict:
		return fmt.Errorf("%w: strict quota limit %d is above %d", store.ErrInvalid, r.Limit, MaxStrict)
	}
	return nil
}

// DecideStrict decides a request of cost at now, in microseconds, under the
// strict rate r, on a key whose log of the last Window is live, oldest
// first, every entry after now - Window. When the decision is allowed, the
// store logs cost entries at StrictStamp(live, now), or, for a refund,
// drops the oldest -cost entries.
func DecideStrict(live []int64, now int64, r store.Rate, cost int) store.Decision {
	n, w := len(live), int64(r.Window/time.Microsecond)
	refused := cost >= 0 && n+cost > r.Limit // a refund is allowed even on an overspent log
	add, drop := 0, 0
	switch {
	case refused:
	case cost > 0:
		add = cost
	case cost < 0:
		drop = min(-cost, n)
	}
	stamp := StrictStamp(live, now)
	// aged returns when admission j, from the newest (0), of the log after
	// the decision leaves the Window.
	aged := func(j int) time.Duration {
		at := stamp
		if j >= add {
			at = live[n-1-(j-add)]
		}
		return time.Duration(at+w-now) * time.Microsecond
	}
	used := n + add - drop
	d := store.Decision{Allowed: !refused, Remaining: max(r.Limit-used, 0)}
	if used > 0 {
		// Remaining grows when the log holds min(used, Limit) - 1.
		d.ResetAfter, d.RefillAfter = aged(0), aged(min(used, r.Limit)-1)
	}
	if refused {
		// cost fits once the log holds Limit - cost: admission Limit - cost
		// from the newest is the last that must leave.
		d.RetryAfter = aged(r.Limit - cost)
	}
	return d
}

// StrictStamp returns the time an admission at now is logged at: now, or
// the newest admission's time if the clock went back, so that the log stays
// in order (and counts a little longer, never shorter).
func StrictStamp(live []int64, now int64) int64 {
	if n := len(live); n > 0 {
		return max(now, live[n-1])
	}
	return now
}
