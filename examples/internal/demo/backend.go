package demo

import (
	"context"
	"flag"

	"github.com/go-throttle/throttle/throttle/store"
)

// Backend is the store the -redis, -redis-cluster and -redis-sentinel
// flags choose, for an example that serves no HTTP (examples/grpc): the
// same stores as the HTTP examples', so that they share locks and quotas.
type Backend struct{ b backend }

// BackendFlags defines -redis, -redis-cluster and -redis-sentinel on the
// command line's flags; once they are parsed, the function it returns reads
// them (an error is a bad flag).
func BackendFlags() func() (Backend, error) {
	redisAddrs := flag.String("redis", "", "Redis address (host:port); several, comma-separated: Redlock over those independent masters; empty keeps locks in this process's memory")
	clusterAddrs := flag.String("redis-cluster", "", "Redis Cluster seed nodes (host:port[,...])")
	sentinel := flag.String("redis-sentinel", "", "Redis Sentinel: master@host:port[,...] (the master's name, then the sentinels)")
	return func() (Backend, error) {
		b, err := chooseBackend(*redisAddrs, *clusterAddrs, *sentinel)
		return Backend{b}, err
	}
}

// Open opens the store of locks, and that of quotas and records
// (Settings.Quotas), as Main does; closeAll closes both.
func (b Backend) Open(ctx context.Context) (locks, quotas store.Store, closeAll func(), err error) {
	return openStore(ctx, b.b)
}
