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
// max(previous+1, the clock in microseconds since 1970). A counter is kept
// for the fence TTL (WithFenceTTL, default 24h) after its last use and then
// removed, so that counters of keys used once do not pile up; a shard that
// holds as many counters as its bound (WithMaxKeys) removes one to make
// room, the least recently used of a few, instead of refusing the
// acquisition. Each shard remembers the highest fence of every counter it
// removed, and a new counter starts above it: so a key's fences only ever
// increase, whatever the wall clock does and however often its counter was
// removed, held or not. (Fences of different keys are unrelated; a new
// counter may start above the clock.)
//
// # A full store, per policy
//
// One store serves all of an application's policies, and a flood of new
// keys on one of them (one route, one attacker) must not turn the others
// off. So each bound (WithMaxKeys for the locks and, separately, the
// quotas; WithMaxRecordBytes) is split evenly over the shards, and each
// shard's part is shared by policies: one policy may hold at most its share
// of it, half by default (WithPolicyShare). A key's policy is the name in
// its hash tag, <prefix>:{<policy>:<id>}, as store.Key builds it; keys of
// another shape count as one policy, and so do the keys of policies past
// the 1024th a shard has seen. Nothing live is ever evicted to make room.
// A full store answers, per policy:
//
//   - Acquire of a new key fails with ErrFull when the key's policy holds
//     its share of the key's shard in live locks, or the shard is full
//     (expired locks are removed first). The Limiter reports it as a store
//     failure and that policy's WhenStoreFails decides (fail open, closed,
//     over). Keys already held answer as always: a duplicate is refused as
//     held, and the holder's Release, Extend and re-entries work.
//   - Every other policy answers as on an empty store: one policy's flood
//     leaves it the rest of every shard (half by default). Only floods on
//     several policies at once (two, with the default share) can fill a
//     store for a third.
//   - Fence counters never make anything fail (see above).
//   - AllowN of a new quota key fails with ErrFull when the key's policy
//     holds its share of the shard's quotas, or the shard is full of them;
//     charges and refunds of live quota keys never fail.
//   - Record fails with ErrFull when the record does not fit what is left
//     of its shard's part of WithMaxRecordBytes or of its policy's share of
//     that, and with store.ErrInvalid when it is larger than one policy's
//     share of one shard's part.
//
// To size a store, count the live keys of the busiest policy: the keys it
// holds at once (for Dedupe and Cooldown its distinct identities per
// Window, for Exclusive the work running at once) or, for a quota, its
// identities not yet back to a full quota. WithMaxKeys should be about
// 1/WithPolicyShare times that (twice, by default), and a little more: the
// keys of a policy do not spread exactly evenly over the shards, so a
// policy is first refused when one of its shards is at its share, before it
// holds its share of the whole store: with 8 shards, measured after 80% of
// it at WithMaxKeys(1000), 93% at 4096, 98% at 65536 and all of it at the
// default (more shards, on more processors, make it sooner). The shares
// bound who may use the room, not how much there is: the memory is that of
// WithMaxKeys whatever the share, at the figures below. For example, a
// busiest policy of 300,000 users per Window fits the default bound (1<<20,
// of which one policy may hold 524,288), and the whole store then costs at
// most about 155 MiB of live heap for held keys without fences, 266 MiB
// with fence counters. A store that serves one policy only (a Fallback made
// for one Limiter, say) may take WithPolicyShare(1).
//
// # Memory and time
//
// The store is split into shards (4 per GOMAXPROCS, at most 64), each a
// mutex, its locks (a ring per TTL class and an index: see table.go and
// ring.go) and maps of fence counters, quotas and Replay records, so that
// goroutines working on different keys rarely wait for each other. The
// number of locks is bounded (WithMaxKeys, default 1<<20, shared evenly by
// the shards), and so, separately, are the numbers of fence counters and of
// quotas. The
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
// full shard, or a policy at its share, is swept completely before a new
// key is refused (or, for fence counters, a live one removed). Time comes from an
// injectable clock (WithClock) and is compared as durations since the store
// was made, so the default time.Now uses the monotonic clock and a wall clock
// step does not expire or prolong locks.
package memstore
