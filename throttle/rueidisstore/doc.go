// Package rueidisstore keeps throttle's locks, quotas and records in Redis
// through github.com/redis/rueidis, whose automatic pipelining lets many
// goroutines share round trips: pick it over redisstore when many requests
// are admitted at once. Its Store is redisstore's on another client (the same
// algorithm, scripts and data, so both may share one Redis), and
// redisstore's documentation holds here, save WithReplicaAck.
package rueidisstore
