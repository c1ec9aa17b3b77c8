package redisalgo

import (
	"cmp"
	"log/slog"
	"time"
)

// Option configures a Store; the public packages document theirs.
type Option func(*config)

type config struct {
	fenceTTL, watchTimeout, ackTimeout time.Duration
	log                                *slog.Logger
	replicas                           int
	near                               int              // see WithNearCache; -1 off
	now                                func() time.Time // a test clock for quotas
	path                               string           // see WithPath
	close                              func() error     // see WithClose
}

// configure applies opts over the defaults.
func configure(opts []Option) config {
	var c config
	for _, o := range opts {
		o(&c)
	}
	c.fenceTTL, c.watchTimeout = max(cmp.Or(c.fenceTTL, 24*time.Hour), time.Second), cmp.Or(c.watchTimeout, time.Second)
	c.ackTimeout = duration(millis(cmp.Or(c.ackTimeout, 50*time.Millisecond)))
	c.log, c.path, c.near = cmp.Or(c.log, slog.Default()), cmp.Or(c.path, "store"), cmp.Or(c.near, nearDefault)
	return c
}

// WithFenceTTL is redisstore.WithFenceTTL.
func WithFenceTTL(d time.Duration) Option { return func(c *config) { c.fenceTTL = max(d, 0) } }

// WithWatchTimeout bounds Watch's wait for a subscription and each background
// call (tests; one second by default).
func WithWatchTimeout(d time.Duration) Option { return func(c *config) { c.watchTimeout = max(d, 0) } }

// WithLogger is redisstore.WithLogger.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithReplicaAck is redisstore.WithReplicaAck; the Conn must be a Waiter.
func WithReplicaAck(replicas int, timeout time.Duration) Option {
	return func(c *config) { c.replicas, c.ackTimeout = max(replicas, 0), max(timeout, 0) }
}

// WithClock makes quotas read now instead of the server's TIME (tests).
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithPath holds plain acquisitions and quota charges on one path (tests):
// "set", "pipeline", "script", or "store", the default, which chooses by Share.
func WithPath(p string) Option { return func(c *config) { c.path = p } }

// WithNearCache is redisstore.WithNearCache.
func WithNearCache(entries int) Option {
	return func(c *config) { c.near = cmp.Or(max(entries, 0), -1) }
}

// WithClose makes Store.Close call f once the store stopped: it closes a
// client the store made (redisstore.Dial).
func WithClose(f func() error) Option { return func(c *config) { c.close = f } }

// Logger returns the logger opts configure.
func Logger(opts ...Option) *slog.Logger { return configure(opts).log }
