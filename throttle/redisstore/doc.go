// Package redisstore keeps throttle's locks, quotas and records in Redis
// through go-redis v9 (a *redis.Client, a Sentinel failover client or a
// *redis.ClusterClient). Package rueidisstore is the same Store on a rueidis
// client; the two can share one Redis.
//
// Run Redis with maxmemory-policy noeviction: any other may drop a lock when
// memory runs short, letting a duplicate through. New checks it once in the
// background and logs a warning. Against one master a key has one holder at
// most (SET NX or a script; release and extend compare the token in Lua). A
// failover can lose locks the replica had not received: WithReplicaAck
// narrows that window, fencing (store.Request.Fence) makes a second holder
// harmless, and one Cluster is one deployment, not the masters redlock needs.
//
// An admission costs one round trip, SET key token NX PX ttl; a refused one
// asks the acquire script for the holder (a second round trip) until about
// one in eight is refused, when SET NX, GET and PTTL are pipelined instead.
// Fenced and reentrant acquisitions, Release, Extend, Record and quotas (GCRA
// on the server's clock) are one script each: EVALSHA, EVAL after NOSCRIPT.
// The scripts, in internal/redisalgo, document the data. A lock's keys share
// its hash tag, so each script touches one Cluster slot; while it migrates,
// scripts on two keys fail as store errors, save Release without a record.
// Release publishes on key+":released", which Watch hears on one connection.
//
// Create the client with ContextTimeoutEnabled and MinIdleConns. go-redis's
// own process-wide logger is left alone (see the goRedisLogs example).
package redisstore
