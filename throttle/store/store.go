package store

import (
	"context"
	"errors"
	"time"
)

// Store keeps short-lived locks, each owned by the token that created it.
//
// The interface is deliberately small so that a store is easy to write and
// easy to check: storetest.Run is the conformance suite every implementation
// in this module passes, and a store of your own should pass it too.
//
// Every method takes the caller's context first and must return promptly when
// it is done. Stores return their own errors unchanged; the throttle limiter
// wraps them so that callers can tell "the store failed" (throttle.ErrStore)
// apart from "somebody holds the key" (throttle.ErrContended), which is not
// an error here but a Grant that was not Acquired.
type Store interface {
	// Acquire takes req.Key for req.Token for req.TTL if nobody holds it, in
	// one atomic step (for Redis: SET key token NX PX ttl). When somebody
	// else holds the key, it reports how long they keep it. An error means
	// the store could not answer; a held key is not an error. A key that
	// req.Token already holds without Reentrant is granted again unchanged:
	// the request is a retry of one whose reply was lost, and the key is
	// the caller's.
	Acquire(ctx context.Context, req Request) (Grant, error)

	// Release frees key if, and only if, it is still held by token. A
	// holder whose lease ran out and whose key somebody else took since
	// gets HeldByOther and frees nothing.
	Release(ctx context.Context, key, token string) (Outcome, error)

	// Extend sets the time to live of key to ttl if, and only if, it is
	// still held by token. It is how a long-running holder keeps its lease.
	// A reentrant key's TTL is raised to ttl but never lowered, as by a
	// re-entry: one owner's holds share it.
	Extend(ctx context.Context, key, token string, ttl time.Duration) (Outcome, error)
}

// Notifier is implemented by stores that can tell a waiting acquirer that a
// key was released, so that a hand-over takes about one round trip instead
// of a polling interval. Stores without it are polled with the policy's
// backoff (throttle.LockConfig.Backoff).
type Notifier interface {
	// Watch returns a channel that receives a value (without blocking the
	// store: extra signals are dropped) after key is released, and a stop
	// function that the caller must call when it no longer waits. A watch
	// that cannot be set up returns an error; the caller then polls.
	Watch(ctx context.Context, key string) (<-chan struct{}, func(), error)
}

// Request says what to acquire and how.
type Request struct {
	// Key is the full stored key, as built by Key.
	Key string
	// Token identifies the holder. It must be unique to this acquisition
	// (see NewToken) or, for Reentrant requests, to the owner.
	Token string
	// TTL is how long the key is held before it expires by itself. It
	// must be positive; stores round it up to a whole millisecond.
	TTL time.Duration
	// Fence asks for a fencing token: a number that strictly increases for
	// Key with every successful acquisition, across every process that
	// shares the store. Grant.Fence carries it.
	Fence bool
	// Reentrant lets the holder of Key (same Token) acquire it again: the
	// store counts the holds and frees the key only when Release has been
	// called as many times. A re-entry raises the key's TTL to TTL but never
	// lowers it, so that a short inner hold cannot cut an outer one short.
	Reentrant bool
}

// Grant is the answer to an acquisition.
type Grant struct {
	// Acquired is true when the caller now holds the key.
	Acquired bool
	// Remaining is, when Acquired is false, how long the current holder
	// keeps the key: at least 1ms while the key has an expiry, or -1 when
	// the key was stored without one (by something other than throttle).
	// It is 0 when Acquired is true.
	Remaining time.Duration
	// TTL is, when Acquired is true, the key's time to live after the
	// acquisition: the request's TTL, or more for a re-entry of a key held
	// longer. It is 0 when Acquired is false.
	TTL time.Duration
	// Fence is the fencing token of this acquisition when the request asked
	// for one, and 0 otherwise. A re-entry reports the fence of the hold it
	// joins; a fenced re-entry of a hold taken without a fence gets a new
	// fence, which later re-entries report too.
	Fence int64
	// Holds is the number of holds the owner has after this acquisition: 1
	// for a first acquisition, more for re-entries, 0 when not Acquired.
	Holds int
}

// Outcome is what a token-checked Release or Extend found.
type Outcome uint8

const (
	// OK means the token held the key: Release freed it, Extend
	// set its new time to live.
	OK Outcome = iota + 1
	// HeldByOther means the key exists but belongs to another token;
	// nothing was changed. For the caller it means its lease was lost.
	HeldByOther
	// Gone means the key no longer exists: it expired or was
	// deleted. Nothing was changed.
	Gone
	// StillHeld is returned by Release of a reentrant key that the
	// token still holds more times: the hold count went down by one and
	// the key stays held.
	StillHeld
)

// String returns the outcome's name for logs.
func (o Outcome) String() string {
	switch o {
	case OK:
		return "ok"
	case HeldByOther:
		return "held-by-other"
	case Gone:
		return "gone"
	case StillHeld:
		return "still-held"
	}
	return "unknown"
}

// InMemory is implemented by stores that answer from the process's own
// memory without waiting on I/O, such as memstore. The throttle limiter
// skips the per-call throttle.Options.Timeout for them: it could never fire,
// and setting it up costs a timer and a context on every request.
type InMemory interface {
	Store
	// InMemory marks the store; it does nothing.
	InMemory()
}

// ErrInvalid is what a store returns for a request it cannot take: an empty
// key or token, a TTL that is not positive. throttle.ErrInvalid is the same
// error, so callers branch on one value whichever layer refused.
var ErrInvalid = errors.New("throttle: invalid argument")

// ErrNotApplied marks the error of a call that surely changed nothing in
// the store: no connection could be made, the client was closed, the store
// is full. Wrap such errors with it (fmt.Errorf("...: %w: %w",
// store.ErrNotApplied, err)). Any other error of Acquire leaves the outcome
// unknown: the command may have taken the key with the request's token after
// all, so the throttle limiter releases that token in the background once
// the store answers again; ErrNotApplied spares it the work.
var ErrNotApplied = errors.New("throttle: store call not applied")

// Drift is the clock drift allowance subtracted from a lease's validity: 1%
// of the TTL plus 2 ms, as the Redlock algorithm prescribes, because the
// store's clock and the caller's may run at slightly different rates. A store
// that reports validity of its own (a quorum store) uses the same figure.
func Drift(ttl time.Duration) time.Duration { return ttl/100 + 2*time.Millisecond }
