package rueidisstore

import (
	"github.com/redis/rueidis"

	"github.com/go-throttle/throttle/internal/redisalgo"
	"github.com/go-throttle/throttle/throttle/redisstore"
)

// New returns the store on client (one server, a Cluster or Sentinel),
// which it does not own: a redisstore.Store, one algorithm over either
// client, configured by redisstore's options (WithFenceTTL, WithLogger;
// WithReplicaAck does not apply). It panics when client is nil.
func New(client rueidis.Client, opts ...redisstore.Option) *redisstore.Store {
	if client == nil {
		panic("rueidisstore: New needs a non-nil client")
	}
	return redisalgo.New("rueidisstore", conn{client}, opts...)
}
