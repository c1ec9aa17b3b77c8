// Package memstore keeps throttle's locks, quotas and records in this
// process's memory, answering as the Redis stores do.
//
// It serves one process only: behind a load balancer a user's copies of a
// request land on other instances, whose memory it cannot see. Use it for
// tests, single-instance services and as the Fallback of throttle.FailOver.
// It is sharded and bounded (WithMaxKeys): nothing live is evicted, and a
// key that does not fit fails for its policy only. It has no goroutines and
// nothing to close. See docs/stores.md in the repository for its internals.
package memstore
