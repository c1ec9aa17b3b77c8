package redisstore

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/internal/redisalgo"
)

// Dial makes a go-redis client from opts, the way the store needs it, and
// returns a store that owns it (Store.Close closes it). opts names one
// server, a Cluster (several Addrs, or IsClusterMode) or a Sentinel group
// (MasterName), as redis.NewUniversalClient reads them; Dial leaves opts
// unchanged. Unlike a client made by hand, the client
//
//   - ends each call at its context's deadline (ContextTimeoutEnabled), so a
//     hung Redis costs a request the policy's Timeout, not the client's
//     ReadTimeout (3 s by default) or more;
//   - keeps its whole pool dialled (MinIdleConns, when opts sets none, is
//     the pool size), so that a burst at start-up finds ready connections.
//
// Dial returns an error, and closes the client, unless Redis answers PING
// before ctx ends. It panics where New does.
func Dial(ctx context.Context, opts *redis.UniversalOptions, options ...Option) (*Store, error) {
	o := *opts
	o.ContextTimeoutEnabled = true
	if o.MinIdleConns == 0 {
		o.MinIdleConns = cmp.Or(o.PoolSize, 10*runtime.GOMAXPROCS(0)) // go-redis's default PoolSize
	}
	client := redis.NewUniversalClient(&o)
	// The store first, so that its hooks see every node the PING makes.
	s := New(client, append(slices.Clip(options), redisalgo.WithClose(client.Close))...)
	if err := client.Ping(ctx).Err(); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("redisstore: Redis does not answer: %w", err)
	}
	return s, nil
}
