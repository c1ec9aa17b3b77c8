package store

import (
	"context"
	"errors"
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
