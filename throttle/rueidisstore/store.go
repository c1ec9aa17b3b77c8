package rueidisstore

import (
	"time"

	"github.com/redis/rueidis"

	"github.com/go-throttle/throttle/internal/redisalgo"
)

// Store keeps locks, quotas and records in Redis: it implements store.Store,
// store.Notifier, store.Quota and store.Recorder, and Close. It is
// redisstore.Store, the one algorithm of both packages, on a rueidis client.
type Store = redisalgo.Store

// New returns a Store on client, made by rueidis.NewClient for one server, a
// Cluster or Sentinel (ClientOption.Sentinel). It panics when client is nil.
// The store does not own the client: Close stops its goroutines and leaves
// the client open. Keep rueidis's automatic pipelining on (the default): it
// is the reason to pick this store.
func New(client rueidis.Client, opts ...Option) *Store {
	if client == nil {
		panic("rueidisstore: New needs a non-nil client")
	}
	return redisalgo.New("rueidisstore", conn{client}, opts...)
}

// Option configures a Store made by New.
type Option = redisalgo.Option

// WithFenceTTL is redisstore.WithFenceTTL: how long a key's fencing counter
// lives after its last fenced acquisition (24 hours by default, at least a
// second).
func WithFenceTTL(d time.Duration) Option { return redisalgo.WithFenceTTL(d) }

// WithWatchTimeout is redisstore.WithWatchTimeout: how long Watch waits for
// a subscription, and each background call (one second by default).
func WithWatchTimeout(d time.Duration) Option { return redisalgo.WithWatchTimeout(d) }
