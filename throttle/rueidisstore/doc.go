// Package rueidisstore keeps throttle's locks, quotas and records in Redis
// through github.com/redis/rueidis, whose automatic pipelining lets the calls
// of many goroutines share round trips: pick it over redisstore when many
// requests are admitted at once (set ClientOption.MaxFlushDelay to about
// 20µs to gather more of them per write; see internal/cmd/loadbench).
//
// Its Store is redisstore's, the same algorithm, scripts and data on another
// client, so processes may use either store on one Redis, and everything
// redisstore documents holds here, except WithReplicaAck, which needs
// go-redis. New takes a client for one server, a Cluster or Sentinel;
// rueidis ends a call when its context does. Watch dedicates one connection
// of the client to every watch of the store.
package rueidisstore
