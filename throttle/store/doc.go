// Package store is the contract between a throttle limiter and the place its
// locks live: the Store interface, its optional capabilities (Notifier,
// Quota, Recorder) and the values they exchange.
//
// Users pick memstore, redisstore, rueidisstore or redlock and never call a
// store themselves. Write a store of your own when locks must live elsewhere,
// and check it with storetest.Run, the conformance suite every store in this
// module passes. docs/stores.md describes the data the stores keep.
//
// A store promises that acquisition is one atomic step that never leaves a
// key without an expiry, and that Release, Extend and Record compare the
// token inside the store, so that a holder whose lease ran out can neither
// free nor extend the lock somebody else holds now. A store that cannot serve
// some requests (redlock refuses fences and reentrancy) has a method
// Refuses(Request) error, matching ErrInvalid for them, so that a limiter
// refuses such a config at construction and storetest skips those checks.
package store
