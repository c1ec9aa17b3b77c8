// Package redisstore keeps throttle's locks, quotas and records in Redis
// through go-redis v9: a *redis.Client, a Sentinel failover client or a
// *redis.ClusterClient, made with ContextTimeoutEnabled so that the
// limiter's timeout bounds a slow Redis. An admission is one round trip.
//
// Run Redis with maxmemory-policy noeviction: any other may drop a lock
// when memory runs short, letting a duplicate through; New warns once.
// See docs/stores.md in the repository for the data, scripts and failovers.
package redisstore
