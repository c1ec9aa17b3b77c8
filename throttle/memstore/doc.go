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
// is kept for the fence TTL (WithFenceTTL, default 24h) after its last use,
// and in any case while its key is held (a lock TTL or a lease kept alive
// may outlast the fence TTL), and then removed, so that counters of keys used
// once do not pile up. So a key's fences never go back while it is held or
// its counter kept, whatever the clock does; after the counter was dropped
// they stay increasing as long as the wall clock does not go back by more
// than the time since the counter's last use.
//
// # Memory and time
//
// The store is split into shards (4 per GOMAXPROCS, at most 64), each a
// mutex, its locks (a ring per TTL class and an index: see table.go and
// ring.go) and maps of fence counters, quotas and Replay records, so that
// goroutines working on different keys rarely wait for each other. The
// number of locks is bounded (WithMaxKeys, default 1<<20, shared evenly by
// the shards), and so, separately, is the number of fence counters. The
// store keeps the key and token strings it is given (not copies), so their
// bytes are part of its cost. With keys made by store.Key("throttle",
// "submit", <user id>) (28 bytes) and tokens from store.NewToken (31
// bytes), BenchmarkMemoryPerKey measures this live heap per key (Go 1.26,
// amd64):
//
//	held key, no fence                about 155 bytes (64 of them the strings)
//	held key with its fence counter   about 235 bytes
//	fence counter of a released key   about 112 bytes (32 of them the key)
//
// A held key's figures include its 64-byte entry in a ring (rings grow by
// blocks of 128 entries) and its 8-byte index slot, with their spare room;
// a lock released or extended leaves a cleared entry (no strings) in its
// ring until the entries before it have left and it reaches the ring's
// head, about one TTL of its class later (at once when it is the ring's
// last). Longer keys add their extra length. A ring's or a map's spare
// room varies as it grows, which the figures include. At the default bound a store is at its largest when a million
// keys are held and the fence counters of a million other keys are kept:
// about 266 MiB of live heap (about 155 MiB without fences).
// The process needs more than that: between collections the garbage
// collector lets the heap grow to about twice its live size (GOGC=100).
// Neither the rings, the index nor the maps shrink, so a store stays about
// as large as it was at its busiest. WithMaxKeys lowers the bound and the
// cost in proportion.
//
// There are no goroutines and nothing to close: an expired entry is removed
// when it is next touched; an expired lock also when a new lock expiry is
// set, which first removes the expired locks at the heads of the shard's
// rings (one ring per TTL class, in which locks expire about in the order
// their expiries were set, so that the expired ones are found without
// looking for them); an insertion of another kind of entry samples a few
// and removes those that expired (as Redis's active expiry does); and a
// full shard is swept completely before it refuses a new key. Time comes from an
// injectable clock (WithClock) and is compared as durations since the store
// was made, so the default time.Now uses the monotonic clock and a wall clock
// step does not expire or prolong locks.
package memstore
