// Package memstore is a store.Store, store.Notifier, store.Quota and
// store.Recorder that keeps its keys in this process's memory.
//
// It serves one process only: behind a load balancer a user's duplicate
// requests land on other instances, whose memory it cannot see. Use it for
// tests, for single-instance services and as the Fallback of
// throttle.FailOver; use a Redis store everywhere else.
//
// It answers as the Redis stores do, so that code tested against it behaves
// the same on Redis: TTLs are rounded up to a whole millisecond, reentrant
// holds are counted, Release and Extend check the token, quotas follow the
// same GCRA, and a fenced acquisition gets max(last fence + 1, the clock in
// microseconds) from a counter per key kept for WithFenceTTL.
//
// # Bounds, per policy
//
// The store is split into shards (4 per GOMAXPROCS, at most 64) so that
// goroutines on different keys rarely wait for each other. WithMaxKeys
// bounds the locks and, separately, the quotas and the fence counters;
// WithMaxRecordBytes bounds the records' bytes; each bound is split evenly
// over the shards, and one policy (the name in a key's hash tag,
// <prefix>:{<policy>:<id>}, see storekit.Key) may hold at most WithPolicyShare
// of each shard's part, so that a flood of new keys on one route leaves the
// others their answers. Nothing live is evicted: a new lock, quota or record
// that does not fit fails with ErrFull, which the limiter hands to the
// policy's WhenStoreFails, while held keys answer as always. Fence counters
// never fail: a full shard drops the least recently used of a few, and new
// counters start above the highest fence it dropped, so a key's fences only
// increase. Size WithMaxKeys at about twice the keys the busiest policy
// holds at once; BenchmarkMemoryPerKey measures the memory per key.
//
// # Expiry
//
// There are no goroutines and nothing to close. An expired entry is removed
// when it is next read, or when a new entry removes a few: locks from the
// heads of their queues, in about the order they expire, other entries from
// a sample, as Redis's active expiry does. A shard that is full, or a policy
// at its share, removes all its expired entries before it refuses one. Time
// comes from WithClock as durations since the store was made, so the default
// time.Now runs on the monotonic clock and a wall clock step neither expires
// nor prolongs a lock.
package memstore
