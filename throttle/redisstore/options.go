package redisstore

import (
	"log/slog"
	"time"
)

// Defaults of the options.
const (
	// DefaultFenceTTL is how long a key's fencing counter is kept after the
	// last fenced acquisition of the key. A day is far longer than any lock
	// TTL, so a counter normally outlives every lease it numbered; see the
	// package documentation for why fences still only increase after it
	// expired.
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
	logger       *slog.Logger
}

// WithFenceTTL sets how long a key's fencing counter is kept after the last
// fenced acquisition of the key (default DefaultFenceTTL). Shorter keeps
// fewer idle counters; the counter restarts from the server clock once it
// expired, so a TTL well above the longest lock TTL loses nothing. d <= 0
// means the default; values below one second are raised to one second.
// memstore.WithFenceTTL means the same.
func WithFenceTTL(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			d = DefaultFenceTTL
		}
		c.fenceTTL = max(d, minFenceTTL)
	}
}

// WithWatchTimeout bounds how long Watch waits for Redis to confirm a
// subscription (default DefaultWatchTimeout). Watch also returns when its
// context ends. It also bounds each call the store makes in the background
// (subscribing, reconnecting the subscription, the start-up check of
// maxmemory-policy), and Close waits at most twice as long for them to stop.
// d <= 0 means the default.
func WithWatchTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			d = DefaultWatchTimeout
		}
		c.watchTimeout = d
	}
}

// WithLogger sets the logger of the store's few log lines: the warnings
// New and its start-up check give about the client's or the server's
// configuration. nil, the default, means slog.Default() at the moment of
// logging. The store does not touch go-redis's own logger (see the package
// documentation).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// log returns the configured logger or, when there is none,
// slog.Default() of the moment.
func (c *config) log() *slog.Logger {
	if c.logger != nil {
		return c.logger
	}
	return slog.Default()
}
