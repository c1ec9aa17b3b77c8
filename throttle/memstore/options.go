package memstore

import (
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// Option configures a Store made by New.
type Option func(*config)

type config struct {
	maxKeys        int
	maxRecordBytes int64
	clock          func() time.Time // nil: time.Now
	fenceTTL       time.Duration
	policyShare    float64
}

const (
	defaultMaxKeys        = 1 << 20
	defaultMaxRecordBytes = 64 << 20
	defaultFenceTTL       = 24 * time.Hour
	defaultPolicyShare    = 0.5
	minFenceTTL           = time.Second // as in redisstore
)

// WithMaxKeys bounds the live locks to about n, and separately the quotas
// and the fence counters, so that a flood of new keys cannot grow the store
// without bound: a new lock or quota that does not fit fails with ErrFull
// (see WithPolicyShare), while a full shard drops a fence counter instead.
// n is split evenly over the shards, so a shard may be full slightly before
// the store is. n < 1 means the default, 1<<20.
func WithMaxKeys(n int) Option {
	return func(c *config) {
		if n >= 1 {
			c.maxKeys = n
		}
	}
}

// WithMaxRecordBytes bounds the bytes of the records (Store.Record) kept at
// once to about n, split evenly over the shards as WithMaxKeys is. A record
// larger than one policy's share of one shard's part can never be kept and
// fails with store.ErrInvalid; one that does not fit what is left fails with
// ErrFull. Records of at most 64 bytes (a Replay's mark that a response was
// not kept) always fit. n < 1 means the default, 64 MiB.
func WithMaxRecordBytes(n int64) Option {
	return func(c *config) {
		if n >= 1 {
			c.maxRecordBytes = n
		}
	}
}

// WithPolicyShare sets the part, in (0, 1], of each shard's bounds that the
// keys of one policy may hold, so that a flood of new keys on one policy
// (one route) leaves the others their answers. The default, one half, keeps
// half of the store for the other policies whatever one of them does; a
// store that serves one policy only may use 1. share <= 0 or NaN means the
// default; above 1 means 1.
func WithPolicyShare(share float64) Option {
	return func(c *config) {
		if share > 0 {
			c.policyShare = min(share, 1)
		}
	}
}

// WithClock makes the store read the time from now instead of time.Now, so
// that tests move time without sleeping. TTLs are measured with Time.Sub
// from the first reading, so a clock with a monotonic reading is immune to
// wall clock steps. A nil now means time.Now.
func WithClock(now func() time.Time) Option {
	return func(c *config) { c.clock = now }
}

// WithFenceTTL sets how long a key's fence counter is kept after the key's
// last fenced acquisition (default 24 hours, far longer than any lock):
// shorter saves memory on many one-off keys, and fences still increase. d <= 0
// means the default; below a second means a second, as redisstore.WithFenceTTL.
func WithFenceTTL(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.fenceTTL = max(d, minFenceTTL)
		}
	}
}

// ErrFull is the error of an Acquire or AllowN that needs a new entry where
// the shard, or the key's policy share of it, is full of live ones, and of a
// Record that does not fit what is left of the record bytes (see
// WithMaxKeys, WithPolicyShare, WithMaxRecordBytes). The Limiter reports it
// as a store failure, so that the policy's WhenStoreFails decides. It
// matches store.ErrNotApplied: nothing was written, so there is nothing to
// release behind it.
var ErrFull error = fullError{}

type fullError struct{}

func (fullError) Error() string        { return "memstore: store is full" }
func (fullError) Is(target error) bool { return target == store.ErrNotApplied }
