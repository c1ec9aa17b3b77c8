// Package storetest is the conformance suite for store.Store
// implementations: the in-memory store, the Redis store, the Redlock store and
// any store of your own run the same checks, so that a Limiter behaves the
// same whichever store it is given.
//
// Call Run from a test in your store's package:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) throttle.Store {
//			return mystore.New( /* a connection to a real server */ )
//		})
//	}
//
// Run calls newStore once per subtest, with that subtest's *testing.T, so
// that a factory can register its own t.Cleanup. Every subtest works on fresh
// random keys, so the factory may hand out one shared store (one Redis
// server, say) instead of a new one each time.
//
// What is checked: acquisition of a free and of a held key, token-checked
// release and extend with their Outcomes, expiry, that a holder whose lease
// ran out can neither free nor extend its successor's lock (the classic
// mistake in the seed documents), exactly one winner under contention,
// strictly increasing fencing tokens, reentrant holds, release notification
// for stores that implement store.Notifier, recorded responses for stores
// that implement store.Recorder (token-checked, read back exactly, gone
// with the lock's expiry or release, waking watchers), cancelled contexts,
// and keys with binary bytes, separators and 4 KiB of length.
//
// The suite never asserts how fast a store is: waits for an expiry or a
// notification are bounded by generous limits (3 s), because test
// machines are noisy and a tight bound only makes flaky tests.
package storetest
