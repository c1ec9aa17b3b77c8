// Package memstore is a throttle.Store and store.Notifier that keeps its
// locks in this process's memory.
//
// It serves ONE process only. A service that runs as several instances
// behind a load balancer gets a user's duplicate submissions on different
// instances, and a lock in one process's memory cannot see the copies that
// land on the others (this is the mistake seed 000 starts from). Use it for
// tests, for single-instance services, and as the Fallback store of
// throttle.FailOver, where "per process" is the accepted degradation while
// Redis is down; use redisstore everywhere else.
//
// # Semantics
//
// The store follows the Redis data model exactly, so that code tested
// against it behaves the same on Redis: a plain lock is a token with an
// expiry; a reentrant lock is an owner token with a hold count, every
// re-entry refreshes the TTL, and Release frees the key only when the count
// drops to zero (store.StillHeld before that). Release and Extend compare
// the token and answer with the same Outcomes as the Redis scripts. TTLs are
// rounded up to a whole millisecond, as Redis does with PX.
//
// Fencing tokens come from a counter per key: each fenced acquisition gets
// max(previous+1, the clock in microseconds since 1970). Taking the clock
// into account keeps fences increasing when a counter was dropped: a counter
// is kept for the fence TTL (WithFenceTTL, default 24h) after its last use
// and then removed, so that counters of keys used once do not pile up.
// Fences stay increasing as long as the wall clock does not go back by more
// than the time since the dropped counter's last use.
//
// # Memory and time
//
// The store is split into shards (64 by default), each a mutex and a map, so
// that goroutines working on different keys rarely wait for each other. The
// number of locks is bounded (WithMaxKeys, default 1<<20, shared evenly by the
// shards), and so is the number of fence counters. A held lock costs about
// 130 bytes of map and entry and a fence counter about 80 more (measured by
// BenchmarkMemoryPerKey; a map's spare room varies as it grows), plus the
// bytes of the key and token, which are kept as passed, not copied. At the
// default bound that is about 130 MiB plus keys in the worst case, reached
// only when a million distinct keys are held at once.
//
// There are no goroutines and nothing to close: an expired entry is removed
// when it is next touched, each insertion also samples a few entries and
// removes those that expired (as Redis's active expiry does), and a full
// shard is swept completely before it refuses a new key. Time comes from an
// injectable clock (WithClock) and is compared as durations since the store
// was made, so the default time.Now uses the monotonic clock and a wall clock
// step does not expire or prolong locks.
package memstore
