package throttle

import "github.com/go-throttle/throttle/throttle/store"

// Store is where a Limiter keeps its locks: memstore.New() for one process,
// redisstore.New(client) for every process that shares a Redis (standalone,
// Sentinel or Cluster). It is defined in package store, with everything else
// a store's author needs; users only pick one and pass it to New.
type Store = store.Store
