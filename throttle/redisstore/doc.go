// Package redisstore keeps throttle locks in Redis, so that every process
// that shares one Redis deployment shares the locks: a duplicate submission
// is caught whichever server instance it reaches.
//
// New takes a go-redis v9 redis.UniversalClient: a standalone *redis.Client,
// a Sentinel failover client (redis.NewFailoverClient) or a
// *redis.ClusterClient all work, because every command and script touches
// keys of a single Cluster hash slot (see Keys below). A *redis.Ring does
// not: each Ring client decides alone which shards are up, so two processes
// can hold one lock on two servers; New panics on it.
//
// # Redis configuration
//
// Run Redis with maxmemory-policy noeviction (the default of a plain
// redis-server, not of every managed service). Every other policy lets
// Redis delete keys when memory runs short, the volatile-* policies
// precisely keys with a time to live, as every lock has: an evicted lock is
// gone without a trace, and the next request for its key gets through.
// Under noeviction a full Redis refuses new locks with an error instead,
// which the Limiter handles like any store failure (Policy.WhenStoreFails).
// New asks for the policy once, in the background (CONFIG GET; on a Cluster,
// every master) and logs a warning unless it is noeviction; it says
// nothing where CONFIG is renamed or forbidden, as managed services often
// do, so check the setting there yourself.
//
// # What it guarantees
//
// Against one Redis master, a key is held by at most one token at a time:
// acquisition is a single atomic SET NX (or a Lua script), and release and
// extend compare the token inside Lua on the server, never GET-then-DEL from
// Go, so a holder whose lease ran out cannot free or extend a lock that
// somebody else holds since (it gets store.HeldByOther).
//
// It does not guarantee mutual exclusion across a failover. Redis replicates
// asynchronously: if the master acknowledges a lock and dies before the
// replica received it, the promoted replica does not know the lock and a
// second client can take it. The same happens when a master without
// persistence restarts. For throttling and de-duplicating requests this
// rare double admission is usually acceptable. When two holders would
// corrupt data, also use fencing tokens (throttle.Policy.Fence): pass
// Lease.Fence to the resource and have it refuse a token lower than one it
// has seen. A holder paused by GC or a network partition past its TTL is
// then harmless too, which no lock service alone can promise. Redlock (a
// quorum of independent masters) narrows the failover window but relies on
// bounded clock drift and pauses; it is a separate store.
//
// # Sentinel and replica acknowledgement
//
// With Redis Sentinel, give New a failover client (redis.NewFailoverClient
// with the sentinels' addresses and ContextTimeoutEnabled: true); it asks
// the sentinels for the master and follows failovers by itself. The tests
// run the store on a real deployment (a master, one replica, three
// sentinels): the conformance suite passes through it, a forced failover
// (SENTINEL FAILOVER) is invisible to a Limiter, and when the master dies
// the sentinels promote the replica within a few seconds, during which a
// fail-open Limiter admits requests unguarded, each within Policy.Timeout,
// and gets leases again as soon as the client has found the new master.
// Such a failover loses every lock the replica had not received yet (see
// above; TestReplicaAckFailover shows the two holders). WithReplicaAck(n,
// timeout) narrows that window: an acquisition that takes a key also sends
// WAIT n timeout in the same round trip, and the grant is reported only
// once n replicas have acknowledged it; otherwise the key is released and
// the call fails with ErrNotReplicated, for Policy.WhenStoreFails to
// decide. It costs every acquisition the replica's round trip (1.5 to 2
// times the time per acquisition on one host under 16 concurrent callers,
// see BenchmarkReplicaAck) and availability: while fewer than n replicas
// are connected, every acquisition waits the timeout and fails.
// WAIT does not make Redis strongly consistent: a failover can still
// promote a replica that did not acknowledge (with more replicas than n),
// a replica restarted without persistence has nothing, and releases and
// extensions are not waited for. The server-side settings
// min-replicas-to-write and min-replicas-max-lag, which make a master
// refuse writes while too few replicas are connected and recent, are a
// cheaper and coarser complement (their lag is counted in seconds).
// Fencing tokens remain the defence where two holders would corrupt data.
//
// # Round trips
//
// Every accepted admission costs one round trip. A plain acquisition sends
// SET key token NX PX ttl alone, the very command of go-redis's SetNX, and
// as fast (BenchmarkAdmissionPaired); when that SET is refused, a second
// round trip asks GET key and PTTL key, pipelined: whether the holder is
// the request's own token (go-redis retried a SET whose reply was lost) and
// how long it keeps the key (Retry-After). So a rejection costs two round
// trips, while rejections are rare. When they are frequent (more than
// about one in eight of the store's recent plain acquisitions, a duplicate
// storm on a hot key), plain acquisitions pipeline SET NX PX with GET and
// PTTL in one round trip instead, accepted or rejected, for some client
// work more per call. Fenced and reentrant acquisitions run the acquire
// script, one round trip. Release and Extend are one script each (Release
// on the lock and its Replay record, Record on the same two keys). Scripts
// run with EVALSHA and fall back to EVAL once when the server answers
// NOSCRIPT. Benchmarks in this package compare these paths with a bare
// SETNX, and a lock cycle (Acquire and Release) with the raw two-round-trip
// lock (SETNX, then a token-checked release script).
//
// # Data model
//
// A plain lock is a string: key = token, with PX ttl. A reentrant lock is a
// hash {token: hold count} with PX ttl (plus the field ":fence" when the
// first acquisition was fenced); every re-entry adds one hold and refreshes
// the ttl, every release removes one and the last one deletes the key. A
// plain acquisition of a hash key, or a reentrant one of a string key, finds
// it held. Release deletes the key only when the token holds it, and then
// publishes on the channel key+":released", which Watch subscribes to so
// that a waiting acquirer is woken at once instead of polling.
//
// Fencing tokens live in a counter at store.FenceKey(key). Each fenced
// acquisition sets it, inside the acquiring script, to
//
//	max(old + 1, Redis server TIME in microseconds)
//
// and gives it a time to live (WithFenceTTL, default 24 h) that every fenced
// acquisition refreshes, so the counters of idle keys do not pile up in
// Redis. While the counter lives it strictly increases. Once it expired, the
// next value comes from the server clock, which has moved on by at least
// the fence TTL since the last value was handed out, and the counter can run
// ahead of the clock only by one microsecond per acquisition; so the new
// value is above every earlier one unless the server's clock steps back (or
// a failover lands on a server whose clock is behind). Values are about
// 1.7e15 today and fit an int64 and a Lua double exactly.
//
// # Keys and Redis Cluster
//
// Keys built by throttle.Key carry a hash tag, "<prefix>:{<policy>:<id>}",
// and the fencing counter (key+":fence") shares it, so a lock and its
// counter always live in one slot and one script may touch both; both are
// passed in KEYS. The release channel is not a key: PUBLISH reaches
// subscribers on every node of a cluster.
//
// While a slot migrates to another master (resharding), a key lives on
// exactly one of the two nodes and go-redis follows the ASK and MOVED
// redirections, so plain acquisitions, Release and Extend keep working and
// a held lock stays held. (Release runs on the lock and its record; while
// their slot migrates it falls back to the lock alone when there is no
// record: see release in record.go.) (go-redis waits its retry backoff, 10
// to 30 ms by default, before it follows a pipeline's redirection, but not
// a single command's: a plain acquisition's SET follows at once, and only
// a refusal's GET and PTTL, or an acquisition made while refusals are
// frequent, is that much slower in the migrating slot.) Fenced and reentrant
// acquisitions run the acquire script on two keys, the lock and its
// counter, and Redis runs no command on several keys of a migrating slot
// on a node that holds only some of them: the source or the target
// answers TRYAGAIN until the migration ends, and go-redis gives up after
// ClusterOptions.MaxRedirects retries (3 by default, about 100 ms in all).
// Such an acquisition then fails with a store error, having taken nothing,
// and the Limiter applies Policy.WhenStoreFails. Migrate the slots of keys
// in use quickly, or give the cluster client a higher MaxRedirects so that
// its retries outlast a migration.
//
// One Redis Cluster is not N independent masters for Redlock. Each slot
// has exactly one master at a time, so a lock lives on one node however
// many masters the cluster has, and a failover to a replica that had not
// received it loses it, as with a single master. Redlock needs
// independent deployments (separate standalone servers or separate
// clusters): a cluster client sends every copy of a lock to the same
// master, and plain clients of the cluster's masters are redirected to it.
//
// # Timeouts
//
// Every call takes a context. go-redis honours the context's deadline on
// the network only when the client was created with
// ContextTimeoutEnabled: true; otherwise ReadTimeout and WriteTimeout bound
// a call. Either way a call returns an error, never hangs, when Redis is
// unreachable.
//
// A Limiter gives a call a Timeout for its reply once sent, and does not
// count a call that queues for a connection behind a burst as a failure
// while Redis answers others (see throttle.Policy.Timeout). Give the client
// a warm pool, MinIdleConns (the examples set it to the pool size, 10 per
// GOMAXPROCS): a burst on a process that has just started then queues for
// open connections instead of dialling them all at once.
//
// The store's background work (the shared Pub/Sub connection of Watch and
// the start-up check) bounds each of its calls by the watch timeout
// (WithWatchTimeout, default 1 s), and Close waits at most twice that for
// it to stop, also when Redis hangs. Only a client without
// ContextTimeoutEnabled can keep go-redis busy longer (up to its
// ReadTimeout); Close then returns an error after its bound, and the
// goroutines end on their own as soon as go-redis gives up.
//
// # Logs
//
// The store logs little, through log/slog (WithLogger, default
// slog.Default()): a warning from New when the client ignores context
// deadlines, and one when Redis may evict keys (see above). go-redis has a
// logger of its own, one for the whole process, on which it reports failed
// dials and connection trouble as unstructured lines on stderr; the store
// leaves it alone. To have those lines in the program's slog output, call
// redis.SetLogger once at start-up with a small adapter (see the
// goRedisLogs example).
package redisstore
