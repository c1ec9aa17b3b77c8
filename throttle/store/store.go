package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Store keeps short-lived locks, each owned by the token that took it. Every
// method returns promptly once ctx is done; a held key is an answer, not an
// error: an error means the store could not answer.
type Store interface {
	// Acquire takes req.Key for req.Token for req.TTL if nobody holds it, in
	// one atomic step (Redis: SET key token NX PX ttl), or reports how long
	// the holder keeps it. A plain key that req.Token already holds is
	// granted again unchanged: the request retries one whose reply was lost.
	Acquire(ctx context.Context, req Request) (Grant, error)
	// Release frees key if, and only if, token holds it.
	Release(ctx context.Context, key, token string) (Outcome, error)
	// Extend sets key's time to live to ttl if, and only if, token holds it,
	// so that a long-running holder keeps its lease. A reentrant key's TTL
	// is raised, never lowered: one owner's holds share it.
	Extend(ctx context.Context, key, token string, ttl time.Duration) (Outcome, error)
	// Delete removes keys whoever holds them, for an operator's reset: a
	// lock key with its record, reentry count and holders, or a quota key
	// (whose quota is then full). A key's fencing counter stays, so that its
	// fences keep increasing. It wakes the keys' watchers. A key that does
	// not exist is no error.
	Delete(ctx context.Context, keys ...string) error
}

// Notifier is implemented by stores that can tell a waiting acquirer that a
// key was released or recorded, so that a hand-over takes a round trip
// instead of a polling interval; other stores are polled with backoff.
type Notifier interface {
	// Watch returns a channel that gets a value, never blocking the store,
	// after key is released or recorded ("look again", not "free"), and the
	// stop function to call when done waiting. On error the caller polls.
	Watch(ctx context.Context, key string) (<-chan struct{}, func(), error)
}

// Recorder is implemented by stores that keep a record next to a lock: bytes
// written by the holder (a Replay's response) that duplicates read instead
// of being refused. The record is tied to the hold: only the holder writes
// it, it expires with the lock as Record left it (a later Extend does not
// move it), Release deletes it in the same atomic step, and a key taken
// again starts without one. Anyone who knows the key reads it.
type Recorder interface {
	// Record stores a copy of rec as key's record and sets key's time to
	// live to ttl as Extend does, both in one atomic step, if token holds
	// key (OK); otherwise it changes nothing (HeldByOther, Gone). The record
	// expires with the key: a Replay holds its in-flight mark under a short
	// lease and keeps the answer for the whole retention. It wakes key's
	// watchers. A store may refuse a large rec with ErrInvalid; it never
	// truncates one.
	Record(ctx context.Context, key, token string, rec []byte, ttl time.Duration) (Outcome, error)
	// Recorded returns a copy of key's record, or found false when there is
	// none.
	Recorded(ctx context.Context, key string) (rec []byte, found bool, err error)
}

// Rate is a quota: Limit requests per Window. A store takes Burst as given:
// callers fill it (usually with Limit) before they pass a Rate.
//
// A smooth rate (Strict false) is decided with GCRA: Burst at once from a
// full quota, then one every Window/Limit. A strict rate is a sliding
// window: a request of cost n is allowed when the admissions of the last
// Window (each request counts its cost), with n more, are at most Limit;
// its Burst must be Limit, its Limit at most 10,000 (a store keeps each
// admission of the Window).
type Rate struct {
	Limit  int           // requests of cost 1 refilled per Window
	Window time.Duration // the period of Limit
	Burst  int           // what a full quota allows at once
	Strict bool          // a sliding window: never more than Limit in any Window
}

// Decision is a Quota's answer. Its durations are whole microseconds (whole
// milliseconds when a smooth Rate's interval is), never negative.
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
	// RefillAfter is, for a strict rate, how long until Remaining grows:
	// until the oldest admission holding it down leaves the Window; 0 when
	// the quota is full. A smooth rate's grows one every Window/Limit, and
	// stores leave it 0.
	RefillAfter time.Duration
}

// Quota is implemented by stores that keep rate quotas with the generic cell
// rate algorithm (GCRA, docs/stores.md): one timestamp per key, expiring
// when the quota is full again, decided atomically for every process; and,
// for a strict Rate, a log of the Window's admissions per key, expiring
// when its newest leaves the Window. A store that cannot decide strict
// rates refuses them with ErrInvalid.
type Quota interface {
	// AllowN decides whether a request of cost under r is allowed now, and
	// charges it when it is; cost 0 peeks. A cost -n refunds n requests
	// charged up front that did not count (a login that succeeded), so that
	// concurrent requests never together exceed r; a refund never fills the
	// quota past full, and under a strict rate gives back the oldest
	// admissions in the Window (whichever request it was, the count in any
	// Window then stays within Limit). key serves this quota only, of one
	// kind (smooth or strict). An error matching ErrInvalid means r cannot
	// decide cost; any other, no answer.
	AllowN(ctx context.Context, key string, r Rate, cost int) (Decision, error)
	// AllowAll decides cost against every limit as one decision, atomically:
	// when each allows it, all are charged; when any refuses, none is, and
	// no Decision is Allowed (each RetryAfter says when its limit alone
	// would allow cost, 0 for those that would now). A refund gives back to
	// all. Decisions come in the order of limits. The keys share a hash tag
	// (one slot on Redis Cluster) and serve these quotas only.
	AllowAll(ctx context.Context, limits []Limit, cost int) ([]Decision, error)
}

// Limit is one quota of an AllowAll decision: its key and its rate.
type Limit struct {
	Key  string
	Rate Rate
}

// Request says what to acquire and how.
type Request struct {
	Key   string        // the full stored key
	Token string        // unique to this acquisition, or to the owner when Reentrant
	TTL   time.Duration // positive; stores round it up to a millisecond
	// Fence asks for a fencing token, a number that strictly increases with
	// every grant of Key across every process sharing the store, so that
	// work guarded by the lock can reject a lapsed holder's writes.
	Fence bool
	// Reentrant lets the owner (same Token) acquire Key again: the store
	// counts the holds, frees the key at the last Release, and lets a
	// re-entry raise the TTL but never lower it.
	Reentrant bool
	// Holders, above 1, lets up to Holders tokens hold Key at once, each
	// for its own TTL (a semaphore: at most N requests in flight); 0 or 1
	// is a lock. A holder that never releases frees its place when its TTL
	// ends. It excludes Reentrant.
	Holders int
}

// Grant is the answer to an acquisition.
type Grant struct {
	Acquired bool // the caller holds the key now
	// Remaining is, when not Acquired, how long the holder keeps the key:
	// at least 1ms, or -1 for a key stored without expiry by someone else.
	Remaining time.Duration
	// TTL is, when Acquired, the key's time to live: the request's, or more
	// for a re-entry of a longer hold.
	TTL time.Duration
	// Fence is the fencing token when asked for, else 0. A re-entry reports
	// its hold's fence (a new one if the hold had none).
	Fence int64
	Holds int // the owner's holds after this acquisition; 0 when not Acquired
	// Holders is, under Request.Holders above 1, how many tokens hold Key
	// after this acquisition (Acquired or not); otherwise 0.
	Holders int
}

// Outcome is what a token-checked Release, Extend or Record found.
type Outcome uint8

const (
	// OK means the token held the key and the call changed it.
	OK Outcome = iota + 1
	// HeldByOther means another token holds the key: the caller's lease was
	// lost, and nothing changed.
	HeldByOther
	// Gone means nobody holds the key (it expired or was freed); nothing
	// changed.
	Gone
	// StillHeld is a Release of a reentrant key the token holds more than
	// once: one hold less, the key stays held.
	StillHeld
)

// ErrInvalid matches the error of a request no store takes: an empty key or
// token, a TTL that is not positive, a Rate that cannot be decided.
var ErrInvalid = errors.New("throttle: invalid argument")

// ErrNotApplied marks the error of a call that surely changed nothing (no
// connection, a closed client, a full store): wrap it with %w. Any other
// error of Acquire leaves the outcome unknown: the limiter releases the
// request's token once the store answers again, lest a lock be left behind.
var ErrNotApplied = errors.New("throttle: store call not applied")

// ErrBusy matches the error of a store that answered but could not decide
// the request now, for contention or load rather than a failure: it changed
// nothing, so it also matches ErrNotApplied. The limiter turns the request
// away as a shed one (503 with Retry-After), whatever
// Options.WhenStoreFails says, and does not count it against the store's
// health: letting it through could admit a duplicate, refusing it as held
// would say that a request holds the key when none does. A full store
// (ErrFull) and a Redlock split vote that did not resolve match it.
var ErrBusy = fmt.Errorf("throttle: store busy: %w", ErrNotApplied)

// ErrFull matches the error of a store that answered but had no room left
// for a new key (a bounded in-memory store under a flood of distinct
// clients); it is load, not an outage, and matches ErrBusy.
var ErrFull = fmt.Errorf("throttle: store full: %w", ErrBusy)
