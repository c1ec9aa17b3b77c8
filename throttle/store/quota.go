package store

import (
	"context"
	"time"
)

// Rate is a quota: Limit requests per Window, of which up to Burst may come
// at once. A store takes Burst as given: callers fill it (usually with
// Limit) before they pass a Rate.
type Rate struct {
	Limit  int           // requests of cost 1 refilled per Window
	Window time.Duration // the period of Limit
	Burst  int           // what a full quota allows at once
}

// Decision is a Quota's answer. Its durations are whole microseconds (whole
// milliseconds when the Rate's interval is), never negative.
type Decision struct {
	// Allowed is true when the cost was charged. A peek (cost 0) is allowed
	// unless the quota is overspent; a refund (cost < 0) always is.
	Allowed bool
	// Remaining is how many requests of cost 1 would be allowed now, after
	// this decision: 0 when none, Burst when the quota is full.
	Remaining int
	// RetryAfter is, when not Allowed, how long until the same cost would
	// be, if nothing else is charged meanwhile; otherwise 0.
	RetryAfter time.Duration
	// ResetAfter is how long until the quota is full again, or 0 when it is.
	ResetAfter time.Duration
}

// Quota is implemented by stores that keep rate quotas with the generic cell
// rate algorithm (GCRA, docs/stores.md): one timestamp per key, expiring
// when the quota is full again, decided atomically for every process.
type Quota interface {
	// AllowN decides whether a request of cost under r is allowed now, and
	// charges it when it is. Cost 0 peeks. A cost -n refunds n requests
	// charged earlier: it lets a caller charge every request up front and
	// give back those that did not count (a login that succeeded), so that
	// concurrent requests never together exceed r; it never fills the quota
	// past full (the key is deleted then). key serves this quota only. An
	// error matching ErrInvalid means r cannot decide cost; any other, no
	// answer.
	AllowN(ctx context.Context, key string, r Rate, cost int) (Decision, error)
}
