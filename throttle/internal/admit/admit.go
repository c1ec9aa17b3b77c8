// Package admit connects package guard to a fast path of package throttle
// that has no place in throttle's API: admitting a request without making
// a *throttle.Lease.
//
// Most requests a Dedupe or Cooldown middleware admits never need their
// lease: the key expires by itself, and only a failed Dedupe request frees
// it early. On an in-memory store the lease (an allocation) and the clock
// reading that dates it are a fifth of an admission's cost, so for such a
// policy the Limiter hands guard the key and token it holds instead, and
// guard asks for the release with them when it must.
//
// Package throttle sets For in its init; package guard, which imports
// throttle, reads it once per Guard.
package admit

import "context"

// Hold is the key a request was admitted with when no lease was made: the
// stored key and the token that holds it.
type Hold struct {
	Key, Token string
}

// Held reports whether h holds a key.
func (h Hold) Held() bool { return h.Key != "" }

// Path is one Limiter's admission for tickets that keep their lease to
// themselves. L is throttle.Lease: a type parameter, so that this package
// need not import throttle.
type Path[L any] struct {
	// Admit is Limiter.Admit, except that when the Limiter can do without
	// a lease (see package throttle's admitHeld) it returns a nil lease
	// and the Hold instead. A request let through because the store failed
	// open gets neither.
	Admit func(ctx context.Context, id string) (*L, Hold, error)
	// Release frees the key of a Hold that Admit returned, as
	// Lease.Release would.
	Release func(ctx context.Context, h Hold) error
}

// For is a func(*throttle.Limiter) Path[throttle.Lease] that returns a
// Limiter's Path; package throttle sets it.
var For any
