// Package memstore is a store.Store, store.Notifier, store.Quota and
// store.Recorder that keeps its keys in this process's memory.
//
// It serves one process only: behind a load balancer a user's duplicate
// requests land on other instances, whose memory it cannot see. Use it for
// tests, for single-instance services and as the Fallback of
// throttle.FailOver; use a Redis store everywhere else.
//
// # Semantics
//
// It follows the Redis stores exactly, so that code tested against it
// behaves the same on Redis: TTLs are rounded up to a whole millisecond,
// a reentrant lock counts its holds and frees the key at the last Release,
// Release and Extend check the token, quotas are decided by the same GCRA
// step for step, and a record lives until the expiry its lock had when it
// was written. Each fenced acquisition gets max(last fence + 1, the clock in
// microseconds), from a counter per key kept for WithFenceTTL after its
// last use.
//
// # Bounds, per policy
//
// The store is split into shards (4 per GOMAXPROCS, at most 64), each a
// mutex and maps of locks, fence counters, quotas and records, so that
// goroutines on different keys rarely wait for each other. WithMaxKeys
// bounds the locks and, separately, the quotas and the fence counters;
// WithMaxRecordBytes bounds the records' bytes; each bound is split evenly
// over the shards. One store serves all of an application's policies, and
// a flood of new keys on one of them must not turn the others off: a key's
// policy is the name in its hash tag, <prefix>:{<policy>:<id>} (see
// store.Key), and one policy may hold at most WithPolicyShare (half by
// default) of each shard's part. Nothing live is ever evicted: a new lock,
// quota or record that does not fit fails with ErrFull, and the Limiter
// lets that policy's WhenStoreFails decide, while keys already held keep
// answering as always. Fence counters never fail: a full shard drops its
// least recently used of a few, and new counters start above the highest
// fence it dropped, so a key's fences only ever increase. Size WithMaxKeys
// at about twice the keys the busiest policy holds at once; the memory per
// key is measured by BenchmarkMemoryPerKey.
//
// # Expiry
//
// There are no goroutines and nothing to close. An expired entry is removed
// when it is next read; a new entry first removes the expired ones among a
// few others (as Redis's active expiry does); and a shard that is full, or
// a policy at its share, removes all its expired entries before it refuses
// one. Time comes from WithClock and is measured as durations since the
// store was made, so the default time.Now runs on the monotonic clock and a
// wall clock step neither expires nor prolongs a lock.
package memstore
