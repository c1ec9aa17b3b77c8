// Package storetest is the conformance suite for store.Store
// implementations: memstore, the Redis stores, redlock and any store of your
// own run the same checks, so that a limiter behaves the same on each. Waits
// for an expiry or a notification are bounded generously (3 s): the suite
// checks what happens, never how fast.
package storetest
