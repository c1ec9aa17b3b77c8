package demo

import (
	"context"

	"github.com/go-throttle/throttle/throttle/store"
)

// Backend is the store the -redis, -redis-cluster and -redis-sentinel
// flags choose, for an example that serves no HTTP (examples/grpc): the
// same stores as the HTTP examples', so that they share locks and quotas.
type Backend struct{ b backend }

// ParseBackend reads the values of -redis, -redis-cluster and
// -redis-sentinel, as Main does; an error is a bad flag.
func ParseBackend(redisAddrs, clusterAddrs, sentinel string) (Backend, error) {
	b, err := chooseBackend(redisAddrs, clusterAddrs, sentinel)
	return Backend{b}, err
}

// Open opens the store of locks, and that of quotas and records
// (Settings.Quotas), as Main does; closeAll closes both.
func (b Backend) Open(ctx context.Context) (locks, quotas store.Store, closeAll func(), err error) {
	return openStore(ctx, b.b)
}
