package redlock

import (
	"time"

	"github.com/go-throttle/throttle/throttle/redisstore"
)

// DefaultNodeTimeout is the longest one node is waited for when no
// WithNodeTimeout is given: Acquire and Extend wait at most a tenth of the
// TTL and at most this long for each node, Release and the clean-up after a
// missed quorum this long. A node that has not answered by then counts as
// down, so that it cannot eat the lock's validity. It equals the
// throttle.Limiter's default Policy.Timeout; the package documentation says
// why it is not the 5 to 50 ms the Redlock description suggests.
const DefaultNodeTimeout = 100 * time.Millisecond

// minNodeTimeout is the shortest automatic node timeout, for TTLs under
// 10 ms (which are too short for a network lock anyway, see the package
// documentation).
const minNodeTimeout = time.Millisecond

// MinNodes is the smallest number of nodes New accepts. With one or two
// nodes the quorum is every node, so the loss of any one stops all
// acquisitions: less available than one Redis, and no failover tolerance,
// which is what a quorum is for.
const MinNodes = 3

// Option configures a Store made by New.
type Option func(*config)

type config struct {
	nodeTimeout time.Duration // 0: the automatic rule of DefaultNodeTimeout
	nodeOpts    []redisstore.Option
}

// WithNodeTimeout sets how long every call waits for one node, instead of
// the automatic rule (a tenth of the TTL, at most DefaultNodeTimeout, for
// Acquire and Extend; DefaultNodeTimeout for Release). Choose it well below
// the shortest TTL you use: the time the quorum took is subtracted from the
// lock's validity, and an acquisition whose validity is spent fails with
// ErrLate. The caller's context still ends a call sooner. d <= 0 means the
// automatic rule.
func WithNodeTimeout(d time.Duration) Option {
	return func(c *config) { c.nodeTimeout = max(d, 0) }
}

// WithStoreOptions passes opts to redisstore.New for the store made on each
// node, for example redisstore.WithLogger or redisstore.WithWatchTimeout.
// (redisstore.WithFenceTTL changes nothing: the Redlock store refuses
// fenced requests.)
func WithStoreOptions(opts ...redisstore.Option) Option {
	return func(c *config) { c.nodeOpts = append(c.nodeOpts, opts...) }
}

// acquireTimeout is the automatic node timeout of an acquisition or
// extension for ttl: a tenth of it, within [minNodeTimeout,
// DefaultNodeTimeout].
func acquireTimeout(ttl time.Duration) time.Duration {
	return min(max(ttl/10, minNodeTimeout), DefaultNodeTimeout)
}
