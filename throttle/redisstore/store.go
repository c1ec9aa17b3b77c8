package redisstore

import (
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/internal/redisalgo"
)

// Store implements store.Store, store.Notifier, store.Quota and
// store.Recorder, and Close, which stops its Pub/Sub connection;
// rueidisstore.New returns one too. Make one per client and share it.
type Store = redisalgo.Store

// New returns a Store on client, which it does not own. It panics when client
// is nil or a *redis.Ring, whose clients each route a key by their own view
// of which shards are up, so that two processes could take one lock on two
// servers. It warns when client ignores context deadlines (made without
// ContextTimeoutEnabled).
func New(client redis.UniversalClient, opts ...Option) *Store {
	switch client.(type) {
	case nil:
		panic("redisstore: New needs a non-nil client")
	case *redis.Ring:
		panic("redisstore: a *redis.Ring cannot hold locks (its clients may disagree on a key's shard): " +
			"use a *redis.ClusterClient, a *redis.Client or a Sentinel failover client")
	}
	var c redisalgo.Conn = waitConn{conn{client}}
	cc, cluster := client.(*redis.ClusterClient)
	if cluster {
		c = conn{client}
	}
	if rc, ok := client.(*redis.Client); cluster && !cc.Options().ContextTimeoutEnabled ||
		ok && !rc.Options().ContextTimeoutEnabled {
		redisalgo.Logger(opts...).Warn("redisstore: the Redis client was made without ContextTimeoutEnabled: " +
			"store calls wait for its ReadTimeout instead of the policy's short Timeout")
	}
	return redisalgo.New("redisstore", c, opts...)
}

// Option configures a Store made by New or by rueidisstore.New.
type Option = redisalgo.Option

// WithFenceTTL sets how long a key's fencing counter lives after its last
// fenced acquisition: 24 hours by default (d <= 0), at least a second. An
// expired counter restarts from the server clock, so fences still increase.
func WithFenceTTL(d time.Duration) Option { return redisalgo.WithFenceTTL(d) }

// WithLogger sets the logger of the store's warnings about the client's or
// the server's configuration; nil, the default, means slog.Default().
func WithLogger(l *slog.Logger) Option { return redisalgo.WithLogger(l) }

// WithReplicaAck narrows the window in which a failover loses a lock (Redis
// replicates asynchronously): an acquisition sends WAIT replicas timeout
// after the acquire script, in the same round trip, and reports a grant only
// once that many replicas have it; otherwise it releases the key and fails.
// A replica that did not acknowledge may still be promoted: fence where two
// holders would corrupt data. replicas <= 0 turns it off (the default);
// timeout <= 0 means 50ms. New panics on a Cluster client, which would send
// WAIT anywhere.
func WithReplicaAck(replicas int, timeout time.Duration) Option {
	return redisalgo.WithReplicaAck(replicas, timeout)
}
