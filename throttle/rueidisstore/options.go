package rueidisstore

import "time"

// Defaults of the options; they mean what redisstore's do.
const (
	// DefaultFenceTTL is how long a key's fencing counter is kept after the
	// last fenced acquisition of the key: a day, far longer than any lock
	// TTL.
	DefaultFenceTTL = 24 * time.Hour

	// DefaultWatchTimeout bounds how long Watch waits for Redis to confirm
	// a subscription before it reports an error (and the Limiter falls
	// back to polling).
	DefaultWatchTimeout = time.Second
)

// minFenceTTL is the shortest fence TTL: shorter would let a counter expire
// while the lease it numbered is still held.
const minFenceTTL = time.Second

// Option configures a Store made by New.
type Option func(*config)

type config struct {
	fenceTTL     time.Duration
	watchTimeout time.Duration
}

// WithFenceTTL sets how long a key's fencing counter is kept after the last
// fenced acquisition of the key (default DefaultFenceTTL). The counter
// restarts from the server clock once it expired, so a TTL well above the
// longest lock TTL loses nothing. d <= 0 means the default; values below
// one second are raised to one second.
func WithFenceTTL(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			d = DefaultFenceTTL
		}
		c.fenceTTL = max(d, minFenceTTL)
	}
}

// WithWatchTimeout sets how long Watch waits for Redis to confirm a
// subscription (default DefaultWatchTimeout; d <= 0 means the default).
func WithWatchTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			d = DefaultWatchTimeout
		}
		c.watchTimeout = d
	}
}
