// Package storetest is the conformance suite for store.Store
// implementations: memstore, the Redis stores, redlock and any store of your
// own run the same checks, so that a limiter behaves the same on each.
//
// A store's package calls Run from a test (see the example): acquisition of
// free and held keys, token-checked release and extend, expiry, a lapsed
// holder that must not free or extend its successor's lock, one winner under
// contention, increasing fences, the holder's own retry, reentrant holds,
// cancelled contexts, odd keys, and, for stores that implement them,
// notifications (store.Notifier) and records (store.Recorder). Waits for an
// expiry or a notification are bounded generously (3 s): the suite checks
// what happens, never how fast.
package storetest
