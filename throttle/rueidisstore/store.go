package rueidisstore

import (
	"time"

	"github.com/redis/rueidis"

	"github.com/go-throttle/throttle/internal/redisalgo"
)

// Store implements store.Store, store.Notifier, store.Quota, store.Recorder
// and Close: it is redisstore.Store, one algorithm over either client.
type Store = redisalgo.Store

// New returns a Store on client (one server, a Cluster or Sentinel), which it
// does not own. It panics when client is nil.
func New(client rueidis.Client, opts ...Option) *Store {
	if client == nil {
		panic("rueidisstore: New needs a non-nil client")
	}
	return redisalgo.New("rueidisstore", conn{client}, opts...)
}

// Option configures a Store made by New; it is redisstore.Option, whose
// WithWatchTimeout and WithLogger apply here too.
type Option = redisalgo.Option

// WithFenceTTL is redisstore.WithFenceTTL: how long a key's fencing counter
// lives after its last fenced acquisition (24 hours by default, at least a
// second).
func WithFenceTTL(d time.Duration) Option { return redisalgo.WithFenceTTL(d) }
