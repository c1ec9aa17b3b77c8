package memstore

import (
	"cmp"
	"time"
)

// Option configures a Store made by New.
type Option func(*config)

type config struct {
	maxKeys        int
	maxRecordBytes int64
	clock          func() time.Time
	fenceTTL       time.Duration // how long a fence counter outlives its last use
}

// WithMaxKeys bounds the live locks to about n, and apart the quotas, the
// fence counters and the admissions that strict rates keep (each counts as
// a key), so that a flood of new keys cannot grow the store without bound
// (about 144 bytes a held lock, 107 a quota, 8 to 64 an admission). One
// policy alone may use all of it. n < 1 means the default, 1<<20.
func WithMaxKeys(n int) Option {
	return func(c *config) { c.maxKeys = cmp.Or(max(n, 0), c.maxKeys) }
}

// WithMaxRecordBytes bounds the bytes of the records kept at once to about n
// (default 64 MiB). A record above a shard's part fails with
// store.ErrInvalid; one of at most 64 bytes (a Replay's mark that a response
// was not kept) always fits.
func WithMaxRecordBytes(n int64) Option {
	return func(c *config) { c.maxRecordBytes = cmp.Or(max(n, 0), c.maxRecordBytes) }
}

// WithClock makes the store read the time from now instead of time.Now, so
// that tests move time without sleeping. A nil now means time.Now.
func WithClock(now func() time.Time) Option {
	return func(c *config) { c.clock = now }
}
