package throttle

import "github.com/go-throttle/throttle/throttle/store"

// Store is where a limiter keeps its locks: memstore.New() for one process,
// redisstore.New(client) for all that share a Redis. Package store defines
// it, with all that a store's author needs.
type Store = store.Store
