package redisalgo

import (
	"log/slog"
	"time"

	"github.com/go-throttle/throttle/internal/redislua"
)

// Option configures a Store; the public packages pass theirs through.
type Option func(*config)

type config struct {
	fenceTTL     time.Duration
	watchTimeout time.Duration
	log          *slog.Logger
	replicas     int
	ackTimeout   time.Duration
	now          func() time.Time // test clock of quotas
	path         Path
}

// Path holds plain acquisitions and quota charges on one way, for tests.
type Path uint8

// The paths; Auto, the default, chooses by what calls find (see Share).
const (
	Auto     Path = iota
	Set           // SET NX alone; quota charges try SET NX first
	Lookup        // SET NX with GET and PTTL in one round trip
	Scripted      // the acquire or GCRA script alone
)

// WithFenceTTL is redisstore.WithFenceTTL.
func WithFenceTTL(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			d = 24 * time.Hour
		}
		c.fenceTTL = max(d, time.Second)
	}
}

// WithWatchTimeout is redisstore.WithWatchTimeout.
func WithWatchTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			d = time.Second
		}
		c.watchTimeout = d
	}
}

// WithLogger is redisstore.WithLogger.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithReplicaAck is redisstore.WithReplicaAck; the Conn must implement
// Waiter.
func WithReplicaAck(replicas int, timeout time.Duration) Option {
	return func(c *config) {
		if timeout <= 0 {
			timeout = 50 * time.Millisecond
		}
		c.replicas, c.ackTimeout = max(replicas, 0), time.Duration(redislua.Millis(timeout))*time.Millisecond
	}
}

// WithClock makes quota decisions use now instead of the server's TIME
// (tests).
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithPath holds plain acquisitions and quota charges on p (tests).
func WithPath(p Path) Option { return func(c *config) { c.path = p } }

func (c *config) logger() *slog.Logger {
	if c.log != nil {
		return c.log
	}
	return slog.Default()
}
