// Package store is for the authors of throttle stores: the Store interface a
// throttle limiter keeps its locks in, the request and answer types of its
// three calls, the optional capabilities a store may add (Notifier,
// InMemory, Quota, Recorder), and the helpers every implementation shares:
// the key layout (Key, FenceKey, RecordKey), unique tokens (NewToken) and
// the drift allowance (Drift).
//
// Users of the middleware or of throttle.Lock.Do never need this package:
// they pick memstore or redisstore and hand it to throttle.NewLock, NewQuota or NewReplay. Write a store
// of your own when your locks must live somewhere else, and check it with
// storetest.Run, the conformance suite every store in this module passes.
//
// # What a store promises
//
// Acquisition is one atomic step that either takes a free key for a token
// with an expiry or reports how long the current holder keeps it; there is no
// moment at which a key exists without an expiry. Release and Extend compare
// the token first, inside the store (a Lua script in Redis), so that a holder
// whose lease ran out can neither free nor extend the lock somebody else holds
// now. Fenced acquisitions number every grant of a key with a strictly
// increasing fencing token; reentrant ones count the holds of one owner.
//
// A store that cannot serve some kinds of request (the Redlock store refuses
// fencing and reentrancy: they cannot be made safe over independent masters)
// has a method Refuses(Request) error that returns an error matching
// ErrInvalid for them. throttle.NewLock then refuses a config that asks for
// them, rather than failing every acquisition at run time, and storetest
// skips the checks that need them.
package store
