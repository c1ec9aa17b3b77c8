package store

import (
	"context"
	"fmt"
	"time"
)

// Quotas use the generic cell rate algorithm (GCRA), as go-redis/redis_rate
// does. A Rate of Limit requests per Window has the emission interval
// T = Window/Limit (Rate.Interval): the quota refills one request every T.
// The store keeps one timestamp per key, the theoretical arrival time (TAT):
// the time at which the key's quota would be full again. A request of cost
// n moves the TAT to max(TAT, now) + n·T, and is allowed when that new TAT
// is at most the tolerance τ = T·Burst ahead of now (redis_rate's
// burst_offset, the same convention): a full quota (TAT at or before now)
// takes a cost of up to Burst at once, and then one more request every T.
// A refused request changes nothing. The key expires when the quota is full
// again, at its TAT, so an idle key costs nothing.
//
// A negative cost -n is a refund: it gives back n requests charged earlier,
// for a request that turned out not to count. A caller that must charge
// only some requests (failed logins, say) charges every request up front
// and refunds the ones that do not count, so that requests running at the
// same time can never together exceed the quota, as they could if each
// were charged only once it had failed. A refund moves the TAT to
// max(max(TAT, now) - n·T, now): it is always allowed and never makes the
// quota more than full. When it leaves the quota full (the new TAT at or
// before now) the store deletes the key, as expiry would have, instead of
// keeping a timestamp that stands for nothing; a refund on a key whose
// quota is already full changes nothing.
//
// Stores count time in whole microseconds (the resolution of Redis's TIME):
// T is Window/Limit rounded down to a microsecond, so a Rate whose Window is
// not a multiple of Limit microseconds allows at most one part in T (in
// microseconds) more than Limit per Window, and every Decision duration is a
// whole number of microseconds. When T is a whole number of milliseconds (10
// per minute, 100 per second: nearly every Rate), they read the clock in
// whole milliseconds instead, so that Redis can keep the TAT as the key's
// expiry, on its own millisecond clock, and decide with a cheaper script:
// every TAT is then a whole millisecond, nothing is rounded, and refills
// land on the clock's millisecond ticks.

// maxTolerance bounds T·Burst so that a TAT (microseconds since 1970, about
// 1.8e15 today) plus the tolerance stays an exact integer in a Lua (double)
// number, below 2^53 microseconds (about 285 years after 1970).
const maxTolerance = 100 * 365 * 24 * time.Hour

// Rate is a quota: Limit requests per Window, of which up to Burst may come
// at once. Callers fill Burst with Limit when they have no other value
// before they pass a Rate to a store: a store takes Burst as given, and
// Burst 0 is invalid.
type Rate struct {
	// Limit is how many requests (of cost 1) the quota refills per Window.
	Limit int
	// Window is the period over which Limit requests are allowed.
	Window time.Duration
	// Burst is how many requests the quota holds: a full quota allows a
	// cost of up to Burst at once.
	Burst int
}

// Interval returns the emission interval T of the GCRA: Window/Limit
// rounded down to a whole microsecond, the time in which the quota refills
// one request. It is meaningful only for a Rate that Check accepts.
func (r Rate) Interval() time.Duration {
	if r.Limit < 1 {
		return 0
	}
	return r.Window / time.Duration(r.Limit) / time.Microsecond * time.Microsecond
}

// Check returns an error matching ErrInvalid when a store cannot decide a
// request of cost under r: Limit < 1, Window <= 0, Burst < 1, a Window
// shorter than Limit microseconds (T would round down to 0), a tolerance
// T·Burst above 100 years, cost > Burst (a cost above Burst could never be
// allowed, however long the caller waited), or cost < -Burst (a refund of
// more than Burst gives back requests that a quota holding Burst can never
// have charged, so it is the caller's mistake). Cost 0 is valid: it is a
// peek, a Decision that charges nothing. A cost from -Burst to -1 is a
// refund.
func (r Rate) Check(cost int) error {
	switch {
	case r.Limit < 1:
		return fmt.Errorf("%w: quota limit %d is below 1", ErrInvalid, r.Limit)
	case r.Window <= 0:
		return fmt.Errorf("%w: quota window %v is not positive", ErrInvalid, r.Window)
	case r.Burst < 1:
		return fmt.Errorf("%w: quota burst %d is below 1", ErrInvalid, r.Burst)
	case r.Interval() < time.Microsecond:
		return fmt.Errorf("%w: quota of %d per %v is above one request per microsecond", ErrInvalid, r.Limit, r.Window)
	case r.Interval() > maxTolerance/time.Duration(r.Burst):
		return fmt.Errorf("%w: quota tolerance %v × %d is above %v", ErrInvalid, r.Interval(), r.Burst, maxTolerance)
	case cost < -r.Burst:
		return fmt.Errorf("%w: quota refund %d is above burst %d", ErrInvalid, -cost, r.Burst)
	case cost > r.Burst:
		return fmt.Errorf("%w: quota cost %d is above burst %d and could never be allowed", ErrInvalid, cost, r.Burst)
	}
	return nil
}

// NextRefill returns how long until the quota of d, decided under r, allows
// one more request of cost 1 than d.Remaining, or 0 when it is full. The
// quota is full again ResetAfter from now and refills one request every
// Interval counting back from then, so the next one comes in ResetAfter
// mod Interval, or a whole Interval when that is 0. It is the RateLimit
// field's "t" for a quota: until then, Remaining is all there is.
func (r Rate) NextRefill(d Decision) time.Duration {
	t := r.Interval()
	if d.ResetAfter <= 0 || t <= 0 {
		return 0
	}
	if rest := d.ResetAfter % t; rest != 0 {
		return rest
	}
	return t
}

// Decision is a quota store's answer to one request. Its durations are whole
// microseconds (whole milliseconds when the Rate's interval is, counted from
// the store clock's last millisecond tick, so at most 1ms longer than from
// the instant of the call); none is ever negative (unlike
// go-redis/redis_rate's Result, no field uses -1).
type Decision struct {
	// Allowed is true when the request was allowed and its cost charged.
	// A request of cost 0 (a peek) charges nothing and is allowed unless
	// the quota is overspent, which happens only when a key is used with a
	// smaller Rate than before: read Remaining to know whether a request
	// of cost 1 would be. A refund (negative cost) is always allowed: it
	// only gives back.
	Allowed bool
	// Remaining is how many requests of cost 1 the quota allows right now,
	// after this decision: after charging this request (or giving back
	// this refund) when Allowed, and as it stands when not (nothing was
	// charged). It is 0 when a request of cost 1 would be refused, and
	// Burst when the quota is full. A
	// refused request of cost n may leave Remaining between 1 and n-1,
	// where redis_rate reports 0.
	Remaining int
	// RetryAfter is 0 when Allowed (redis_rate reports -1); otherwise how
	// long until the same cost would be allowed, if nothing else is
	// charged meanwhile. It is then at least 1µs.
	RetryAfter time.Duration
	// ResetAfter is how long until the quota is full again (Remaining
	// back to Burst, the key gone from the store), or 0 when it is full
	// now (a peek at an unused key, or a refund that filled it). It is the
	// TAT minus now.
	ResetAfter time.Duration
}

// Quota is implemented by stores that keep GCRA quotas: one timestamp (the
// theoretical arrival time, TAT) per key, which expires when the quota is
// full again.
type Quota interface {
	// AllowN decides, atomically for key across every process sharing the
	// store, whether a request of cost under r is allowed now, and charges
	// it when it is. Key is the full stored key, as built by Key; it must
	// not be used for anything but this quota. Cost 0 peeks without
	// charging. A negative cost -n refunds n requests charged earlier: it
	// is always allowed, gives back at most what makes the quota full
	// (deleting the key then), and on a key whose quota is already full
	// changes nothing and returns the full Decision {Allowed: true,
	// Remaining: Burst}. Its Decision is otherwise that of the quota after
	// the refund, with RetryAfter 0. An error matching ErrInvalid means
	// r.Check(cost) failed; any other error means the store could not
	// answer.
	AllowN(ctx context.Context, key string, r Rate, cost int) (Decision, error)
}
