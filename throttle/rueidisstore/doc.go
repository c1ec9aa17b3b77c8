// Package rueidisstore keeps throttle's keys in Redis through
// github.com/redis/rueidis, whose automatic pipelining lets the calls of
// many goroutines share round trips. Pick it over redisstore (go-redis)
// when many requests are admitted at once: on a loaded instance, admission
// costs a share of a network write and a read instead of one each: at 64
// concurrent callers, about twice the throughput of one go-redis command
// per call with rueidis's defaults, and 2.3 to 3.6 times with MaxFlushDelay
// (see Clients), with a fraction of the tail latency and no allocations in
// the store (see the README's performance section, and
// internal/cmd/loadbench to measure on your machine).
//
// The data in Redis is redisstore's, key for key, and the Lua scripts are
// the same: processes of one service may use either store on one Redis, and
// everything redisstore documents about the data model, fencing tokens,
// reentrant locks, quotas (GCRA on the server's clock) and records holds
// here too.
//
// # Round trips
//
// A plain acquisition (neither fenced nor reentrant: Dedupe, Cooldown,
// Exclusive and Replay unless the policy asks for fencing or reentrancy) is
// one command, SET key token NX PX ttl GET, which needs Redis
// 7.0: it takes a free key, and answers the holder's token otherwise (so
// that a retried command that had in fact taken the key is recognised by
// its own token). Only a refused acquisition asks for the holder's PTTL
// with a second command, for Retry-After. Against an older Redis the store
// sees the syntax error once and uses a pipeline of SET NX PX, GET and PTTL
// from then on. Fenced and reentrant acquisitions, releases, extensions,
// quota decisions and records are one script each (EVALSHA, falling back to
// EVAL after NOSCRIPT). Records need Redis 7.0 (PEXPIRETIME).
//
// # Clients
//
// Give New a client from rueidis.NewClient:
//
//	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:6379"}})
//
// The same call makes a Cluster client when the address is a Cluster node
// (every command the store sends touches one hash slot: the keys are built
// with store.Key's hash tag), and a Sentinel client with
// ClientOption.Sentinel. One Redis Cluster is one deployment, not N
// independent masters: for Redlock use package redlock.
//
// rueidis ends a call when its context does, so the Limiter's
// Policy.Timeout bounds every store call without client settings. The
// store does not own the client; close the client after the store.
//
// For a service that admits many requests at once, set
// ClientOption.MaxFlushDelay to about 20µs: rueidis then lets commands
// gather for that long before it writes them, so that one system call
// carries more of them. On a two-core machine shared with Redis, at 64
// concurrent callers, that raised a Limiter's admissions from about 2× to
// 2.3–3.6× raw go-redis SetNX's throughput (the store's own from 2.2–2.6×
// to 4.4–5.7×), cut p50 by a third and p99 by half or more; with few
// concurrent callers it changes little (the README's performance section
// has the tables).
//
// # Watch
//
// Watch subscribes to a key's release channel once per key, however many
// waiters it has, on rueidis's shared connection, and unsubscribes when the
// last waiter leaves (rueidis would otherwise keep the subscription for the
// connection's life).
//
// # What is not here
//
// redisstore's replica acknowledgement (WithReplicaAck, Redis WAIT) is not
// offered: use redisstore where a lock must be on replicas before it
// admits.
package rueidisstore
