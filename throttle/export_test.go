package throttle

import "time"

// Accessors for the external tests of this package: the lease's internals
// are not part of the API, but the tests check them.

func (k *Lock) StoredKey(id string) string { return k.l.key(id) }
func (ls *Lease) Key() string              { return ls.key }
func (ls *Lease) Token() string            { return ls.token }
func (ls *Lease) Holds() int               { return int(ls.holds) }
func (ls *Lease) TTL() time.Duration       { return ls.ttl }

// SetBackoff sets the backoff of a Replay's waiting duplicates, which
// ReplayConfig does not offer: the tests make it sleep an hour to prove
// that a waiter is woken by the store's notification, not by polling.
func (r *Replay) SetBackoff(b Backoff) { r.l.p.Backoff = b }

// ExponentialJitter is the default backoff, for the tests.
var ExponentialJitter = exponentialJitter
