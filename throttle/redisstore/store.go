package redisstore

import (
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/internal/redisalgo"
)

// Store keeps locks, quotas and records in Redis: it implements store.Store,
// store.Notifier, store.Quota and store.Recorder, whose documentation is its
// methods' (see the package documentation for how), and Close. It is
// rueidisstore.Store too: one algorithm over either client. Make one per
// client and share it; it is safe for concurrent use.
type Store = redisalgo.Store

// New returns a Store on client: a *redis.Client, a Sentinel failover client
// (redis.NewFailoverClient) or a *redis.ClusterClient. It panics when client
// is nil or a *redis.Ring, whose clients each route a key by their own view
// of which shards are up, so that two processes can take one lock on two
// servers.
//
// The store does not own the client: Close stops the store's goroutines and
// leaves it open. Create the client with ContextTimeoutEnabled, or go-redis
// waits its ReadTimeout instead of a call's deadline (New logs a warning).
// New also checks maxmemory-policy once in the background (see the package
// documentation); neither check delays New or makes it fail.
func New(client redis.UniversalClient, opts ...Option) *Store {
	switch client.(type) {
	case nil:
		panic("redisstore: New needs a non-nil client")
	case *redis.Ring:
		panic("redisstore: a *redis.Ring cannot hold locks: each Ring client routes a key by its own " +
			"view of which shards are up, so two processes can take one lock on two servers; " +
			"use a *redis.ClusterClient, a *redis.Client or a Sentinel failover client")
	}
	var c redisalgo.Conn = waitConn{conn{client}}
	deadlines := true
	switch cl := client.(type) {
	case *redis.ClusterClient:
		c, deadlines = conn{client}, cl.Options().ContextTimeoutEnabled
	case *redis.Client:
		deadlines = cl.Options().ContextTimeoutEnabled
	}
	if !deadlines {
		redisalgo.Logger(opts...).Warn("redisstore: the Redis client was made without ContextTimeoutEnabled: " +
			"store calls wait for its ReadTimeout instead of the policy's short Timeout")
	}
	return redisalgo.New("redisstore", c, opts...)
}

// Option configures a Store made by New.
type Option = redisalgo.Option

// WithFenceTTL sets how long a key's fencing counter lives after the key's
// last fenced acquisition: 24 hours by default (d <= 0), at least a second.
// Shorter keeps fewer idle counters; an expired counter restarts from the
// server clock, so a TTL well above the longest lock's loses nothing.
func WithFenceTTL(d time.Duration) Option { return redisalgo.WithFenceTTL(d) }

// WithWatchTimeout bounds how long Watch waits for Redis to confirm a
// subscription, and each call the store makes in the background: one second
// by default (d <= 0). Close waits at most twice as long.
func WithWatchTimeout(d time.Duration) Option { return redisalgo.WithWatchTimeout(d) }

// WithLogger sets the logger of the store's warnings about the client's or
// the server's configuration; nil, the default, means slog.Default().
func WithLogger(l *slog.Logger) Option { return redisalgo.WithLogger(l) }

// WithReplicaAck makes every acquisition that takes a key wait, with WAIT
// replicas timeout in the same round trip, until replicas replicas have it,
// narrowing the window in which a failover loses a lock (Redis replicates
// asynchronously). Acquisitions then run the acquire script. A grant that
// too few replicas acknowledged within timeout (default 50ms, rounded up to
// a millisecond) is released again and fails with ErrNotReplicated, for
// Policy.WhenStoreFails to decide; a grant written by an earlier attempt
// (the client retried) costs one more round trip to be confirmed. Every
// acquisition takes a replica round trip longer (BenchmarkReplicaAck), and
// while fewer replicas are connected each waits the timeout. WAIT does not
// make Redis consistent: releases and extensions are not waited for, and a
// replica that did not acknowledge may still be promoted; use fencing where
// two holders would corrupt data. replicas <= 0 turns it off (the default).
// It needs a *redis.Client (standalone or Sentinel): New panics on a Cluster
// client, which would send WAIT to an arbitrary node.
func WithReplicaAck(replicas int, timeout time.Duration) Option {
	return redisalgo.WithReplicaAck(replicas, timeout)
}

// ErrNotReplicated is matched by the error of an acquisition that fewer
// replicas than WithReplicaAck asks for acknowledged in time; it also
// matches store.ErrNotApplied when the key was released again.
var ErrNotReplicated = redisalgo.ErrNotReplicated
