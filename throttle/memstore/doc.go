// Package memstore keeps throttle's locks, quotas and records in this
// process's memory.
//
// It serves one process only: behind a load balancer a user's copies of a
// request land on other instances, whose memory it cannot see. Use it for
// tests, single-instance services and as the Fallback of throttle.FailOver;
// use a Redis store everywhere else. It answers as the Redis stores do (TTLs
// rounded up to a millisecond, the same GCRA, increasing fences), so code
// tested on it behaves the same on Redis.
//
// The store is sharded (4 per GOMAXPROCS, at most 64) so that goroutines on
// different keys rarely meet, and bounded: WithMaxKeys bounds the locks and,
// apart, the quotas and fence counters, WithMaxRecordBytes the records, and
// one policy (the name in a key's hash tag) holds at most half of each
// shard's part, so that a flood on one route leaves the others room. Nothing
// live is evicted: what does not fit fails with an error matching
// store.ErrNotApplied, which the limiter hands to WhenStoreFails. A full shard drops its oldest fence counters,
// and new ones start above them, so fences still only increase.
//
// There are no goroutines and nothing to close: an expired entry is removed
// when read, or when a new entry removes a few (locks in about the order
// they expire), as Redis's active expiry does. Time comes from WithClock,
// measured from the store's creation, so a wall clock step neither expires
// nor prolongs a lock.
package memstore
