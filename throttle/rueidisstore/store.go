package rueidisstore

import (
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

// Option configures a Store made by New: redisstore's options (WithFenceTTL,
// WithLogger), save WithReplicaAck, apply.
type Option = redisalgo.Option
