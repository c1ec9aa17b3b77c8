// Package memstore keeps throttle's locks, quotas and records in this
// process's memory, answering as the Redis stores do.
//
// It serves one process only: behind a load balancer a user's copies of a
// request land on other instances, whose memory it cannot see. Use it for
// tests, single-instance services and as the Fallback of throttle.FailOver.
// It is sharded and bounded (WithMaxKeys). One policy alone may fill it;
// several share it fairly. To make room it drops refilled quotas, then the
// least recently used ones, never a held lock; a key that still does not fit
// fails with store.ErrFull, which the limiter answers as load (503), never by
// letting the request through. It has no goroutines and nothing to close.
// See docs/stores.md in the repository for its internals.
package memstore
