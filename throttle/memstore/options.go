package memstore

import (
	"fmt"
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
)

// WithMaxKeys bounds the live locks to about n, and separately the quotas
// and the fence counters, so that a flood of new keys cannot grow the store
// without bound (see the package documentation). n is split evenly over the
// shards, so a shard may be full slightly before the store is. n < 1 means
// the default, 1<<20.
func WithMaxKeys(n int) Option {
	return func(c *config) {
		if n >= 1 {
			c.maxKeys = n
		}
	}
}

// WithMaxRecordBytes bounds the bytes of the records (Store.Record) kept at
// once to about n, split as WithMaxKeys is. A record larger than one
// policy's share of one shard's part fails with store.ErrInvalid, one that
// does not fit what is left with ErrFull too; one of at most 64 bytes (a
// Replay's mark that a response was not kept) always fits. n < 1 means 64 MiB.
func WithMaxRecordBytes(n int64) Option {
	return func(c *config) {
		if n >= 1 {
			c.maxRecordBytes = n
		}
	}
}

// WithPolicyShare sets the part, in (0, 1], of each shard's bounds that the
// keys of one policy may hold, so that a flood on one policy leaves the
// others their answers. The default, one half, keeps half of the store for
// the others; a store that serves one policy only may use 1. share <= 0 or
// NaN means the default; above 1 means 1.
func WithPolicyShare(share float64) Option {
	return func(c *config) {
		if share > 0 {
			c.policyShare = min(share, 1)
		}
	}
}

// WithClock makes the store read the time from now instead of time.Now, so
// that tests move time without sleeping. A nil now means time.Now.
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
			c.fenceTTL = max(d, time.Second)
		}
	}
}

// ErrFull is the error of an Acquire, AllowN or Record whose new entry does
// not fit the store's bounds (see WithMaxKeys). The limiter reports it as a
// store failure, so that the policy's WhenStoreFails decides. It matches
// store.ErrNotApplied: nothing was written, so nothing needs releasing.
var ErrFull = fmt.Errorf("memstore: store is full: %w", store.ErrNotApplied)
