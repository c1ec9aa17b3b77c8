// Package redisstore keeps throttle's locks, quotas and records in Redis
// through go-redis v9: a *redis.Client, a Sentinel failover client or a
// *redis.ClusterClient. Create the client with ContextTimeoutEnabled, so that
// a slow Redis is bounded by the limiter's timeout. rueidisstore is the same
// store on a rueidis client; the two share one Redis.
//
// Run Redis with maxmemory-policy noeviction: any other may drop a lock when
// memory runs short, letting a duplicate through; New checks it once in the
// background and logs a warning. One master has one holder per key at most,
// but a failover can lose locks the replica had not received: WithReplicaAck
// narrows that window, fencing makes a second holder harmless, and redlock
// spreads locks over independent masters.
//
// An admission is one round trip (SET NX PX, pipelined with GET and PTTL
// while refusals are frequent); fenced and reentrant acquisitions, Release,
// Extend, Record and quotas are one Lua script each, sent with EVALSHA
// (EVAL after NOSCRIPT). A lock's keys share its hash tag, so each script
// touches one Cluster slot. Release publishes on key+":released", which
// Watch hears on one Pub/Sub connection. docs/stores.md describes the data.
package redisstore
