package memstore

import "time"

// Option configures a Store made by New.
type Option func(*config)

type config struct {
	maxKeys        int
	maxRecordBytes int64
	clock          func() time.Time // nil: time.Now
	fenceTTL       time.Duration
	policyShare    float64
}

// DefaultMaxKeys is the default bound on the number of locks (and, separately,
// of fence counters and of quotas) a Store keeps: about 1M keys, enough for a
// busy single instance, of which one policy may hold DefaultPolicyShare. At this bound a store takes at most about 266 MiB of live heap
// with fence counters and 155 MiB without, key and token bytes included for
// keys of about 30 bytes (see Memory and time in the package documentation).
const DefaultMaxKeys = 1 << 20

// DefaultFenceTTL is how long a key's fencing counter is kept after the last
// fenced acquisition of the key. A day is far longer than any lock TTL, so a
// counter normally outlives every lease it numbered.
const DefaultFenceTTL = 24 * time.Hour

// minFenceTTL is the shortest fence TTL, as in redisstore.
const minFenceTTL = time.Second

// WithMaxKeys bounds the number of live locks to about n (n is split evenly
// over the shards, so a shard may be full slightly before the store is), and
// the number of fence counters and of quotas likewise; one policy may hold
// a share of each bound (WithPolicyShare). An Acquire that needs a new lock
// in a shard that is full, or where the key's policy holds its share,
// first removes the shard's expired locks; when none expired it fails with
// ErrFull, which the Limiter treats as a store failure so that the policy's
// WhenStoreFails decides. Fence counters never refuse: a full shard drops
// one (see the package documentation). n < 1 means DefaultMaxKeys.
func WithMaxKeys(n int) Option {
	return func(c *config) {
		if n < 1 {
			n = DefaultMaxKeys
		}
		c.maxKeys = n
	}
}

// DefaultPolicyShare is the default part of each bound (WithMaxKeys,
// WithMaxRecordBytes) that one policy may hold.
const DefaultPolicyShare = 0.5

// WithPolicyShare sets the part of each bound of the store (the locks and
// the quotas of WithMaxKeys, the bytes of WithMaxRecordBytes, each per
// shard) that the keys of one policy may hold, share in (0, 1]: a policy
// past its share is refused new entries with ErrFull while the others
// still find room, so that a flood of new keys on one policy (one route)
// does not change the answers of the others. A key's policy is the one
// named in its hash tag, <prefix>:{<policy>:<id>} (see store.Key); keys
// without one count as one policy. The default, DefaultPolicyShare, leaves
// half of the store to the other policies whatever one of them does; 1
// lets one policy fill the store (the others then fail with ErrFull too);
// a store that serves one policy only can use 1, or twice the WithMaxKeys
// it needs. share <= 0 or NaN means the default; above 1 means 1.
func WithPolicyShare(share float64) Option {
	return func(c *config) {
		if !(share > 0) {
			share = DefaultPolicyShare
		}
		c.policyShare = min(share, 1)
	}
}

// WithClock makes the store read the time from now instead of time.Now. Tests
// use it to move time forward without sleeping. The store measures TTLs with
// Time.Sub against the first reading, so a clock with a monotonic reading
// (like time.Now) is immune to wall clock steps. A nil now means time.Now.
func WithClock(now func() time.Time) Option {
	return func(c *config) { c.clock = now }
}

// WithFenceTTL sets how long a key's fencing counter is kept after the last
// fenced acquisition of the key (default DefaultFenceTTL). Shorter saves
// memory on many one-off keys; fences stay increasing either way while the
// wall clock does not step back (see the package documentation). d <= 0
// means the default; values below one second are raised to one second.
// redisstore.WithFenceTTL means the same.
func WithFenceTTL(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			d = DefaultFenceTTL
		}
		c.fenceTTL = max(d, minFenceTTL)
	}
}

// DefaultMaxRecordBytes is the default bound on the bytes of all records a
// Store keeps (see Store.Record): 64 MiB, split evenly over the shards, so
// that with the default shards a single record may be up to 1 MiB.
const DefaultMaxRecordBytes = 64 << 20

// WithMaxRecordBytes bounds the bytes of the records (Store.Record) the
// store keeps at once to about n, so that the responses it is given to
// replay cannot grow it without bound. Only the records' own bytes count;
// their keys are the locks'. n is split evenly over the shards, as
// WithMaxKeys is (64 shards, fewer for a store of fewer than 1024 keys), so
// a record larger than one shard's share can never be kept: Record refuses
// it with an error matching store.ErrInvalid, and never truncates it. A
// record that fits the share but not what is left of it fails with ErrFull
// once the shard's expired records were removed, as a new lock does in a
// full shard. n < 1 means DefaultMaxRecordBytes.
func WithMaxRecordBytes(n int64) Option {
	return func(c *config) {
		if n < 1 {
			n = DefaultMaxRecordBytes
		}
		c.maxRecordBytes = n
	}
}
