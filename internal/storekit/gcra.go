package storekit

import (
	"fmt"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// Quotas use the generic cell rate algorithm (docs/stores.md): a key keeps
// its theoretical arrival time (TAT), when its quota is full again; a cost n
// moves it n·T on from max(TAT, now), allowed while at most T·Burst ahead.

// maxTolerance keeps a TAT in microseconds plus T·Burst below 2^53, exact in Lua.
const maxTolerance = 100 * 365 * 24 * time.Hour

// Interval returns r's emission interval T, Window/Limit rounded down to a
// microsecond, or 0 when Limit < 1.
func Interval(r store.Rate) time.Duration {
	if r.Limit < 1 {
		return 0
	}
	return r.Window / time.Duration(r.Limit) / time.Microsecond * time.Microsecond
}

// Check returns an error matching store.ErrInvalid when no store can decide
// a request of cost under r (a cost above Burst could never be allowed).
func Check(r store.Rate, cost int) error {
	t := Interval(r)
	switch {
	case r.Limit < 1:
		return fmt.Errorf("%w: quota limit %d is below 1", store.ErrInvalid, r.Limit)
	case r.Window <= 0:
		return fmt.Errorf("%w: quota window %v is not positive", store.ErrInvalid, r.Window)
	case r.Burst < 1:
		return fmt.Errorf("%w: quota burst %d is below 1", store.ErrInvalid, r.Burst)
	case t < time.Microsecond:
		return fmt.Errorf("%w: quota of %d per %v is above one request per microsecond", store.ErrInvalid, r.Limit, r.Window)
	case t > maxTolerance/time.Duration(r.Burst):
		return fmt.Errorf("%w: quota tolerance %v × %d is above %v", store.ErrInvalid, t, r.Burst, maxTolerance)
	case cost < -r.Burst:
		return fmt.Errorf("%w: quota refund %d is above burst %d", store.ErrInvalid, -cost, r.Burst)
	case cost > r.Burst:
		return fmt.Errorf("%w: quota cost %d is above burst %d and could never be allowed", store.ErrInvalid, cost, r.Burst)
	}
	return checkStrict(r)
}

// CheckLock returns an error matching store.ErrInvalid for a lock call no
// store takes; ":fence" is a reentrant lock's fence field in Redis.
func CheckLock(name, key, token string, ttl time.Duration) error {
	switch {
	case key == "" || token == "":
		return fmt.Errorf("%w: %s: empty key or token", store.ErrInvalid, name)
	case token == ":fence":
		return fmt.Errorf("%w: %s: token %q is reserved", store.ErrInvalid, name, token)
	case ttl <= 0:
		return fmt.Errorf("%w: %s: ttl %v is not positive", store.ErrInvalid, name, ttl)
	}
	return nil
}

// NextRefill returns the RateLimit field's "t" of a quota: how long until
// d's quota under r allows one more request, or 0 when it is full.
func NextRefill(r store.Rate, d store.Decision) time.Duration {
	if r.Strict {
		return d.RefillAfter
	}
	t := Interval(r)
	if d.ResetAfter <= 0 || t <= 0 {
		return 0
	}
	if rest := d.ResetAfter % t; rest != 0 {
		return rest
	}
	return t
}

// Decide decides a request of cost at now on a key whose TAT is tat, both in
// microseconds, and returns the decision and the TAT to keep (now when a
// refund fills the quota). gcra.lua is the same, step for step.
func Decide(tat, now int64, r store.Rate, cost int) (store.Decision, int64) {
	t := int64(Interval(r) / time.Microsecond)
	tau := t * int64(r.Burst)
	tat = max(tat, now)
	newTAT := max(tat+int64(cost)*t, now)
	remaining := func(at int64) int { return int(max(tau-(at-now), 0) / t) }
	us := func(n int64) time.Duration { return time.Duration(n) * time.Microsecond }
	if cost >= 0 && newTAT-now > tau { // a refund is allowed even on an overspent quota
		return store.Decision{Remaining: remaining(tat), RetryAfter: us(newTAT - tau - now), ResetAfter: us(tat - now)}, tat
	}
	return store.Decision{Allowed: true, Remaining: remaining(newTAT), ResetAfter: us(newTAT - now)}, newTAT
}
