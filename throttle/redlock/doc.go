// Package redlock keeps throttle locks on a quorum of independent Redis
// masters (the Redlock algorithm), so that a lock survives the crash, the
// restart or the failover of a minority of them, which a single Redis
// (redisstore) does not: there, a master that dies before its replica got
// the lock, or restarts without persistence, hands the lock to a second
// holder.
//
// # Use
//
//	clients := []redis.UniversalClient{ // one client per independent master
//		redis.NewClient(&redis.Options{Addr: "redis-a:6379", ContextTimeoutEnabled: true}),
//		redis.NewClient(&redis.Options{Addr: "redis-b:6379", ContextTimeoutEnabled: true}),
//		redis.NewClient(&redis.Options{Addr: "redis-c:6379", ContextTimeoutEnabled: true}),
//	}
//	st, err := redlock.New(clients)
//	if err != nil { ... }
//	defer st.Close()
//	limiter, err := throttle.New(st, throttle.Policy{Name: "submit"})
//
// NewOnStores takes a store per master instead of a client, for example
// rueidisstore stores, whose rueidis clients let the concurrent
// acquisitions sent to each node share round trips; a Redlock admission is a
// command on every node, so that is where it saves most.
//
// New needs at least three nodes; use an odd number (3 survive one failed
// node, 5 survive two; 4 survive no more than 3). Each node gets a
// redisstore.Store of its own, so the scripts, the own-token retry rule and
// the Redis configuration advice of redisstore (maxmemory-policy
// noeviction, ContextTimeoutEnabled) apply to every node.
//
// go-redis (v9.22) retries a refused dial five times, 100 ms apart, before
// it reports it, longer than the node timeout: a node that is down then
// shows as a node that timed out, which changes no decision. Set
// DialerRetries: 1 in the nodes' options to have it reported at once; an
// acquisition that every node refused is then marked store.ErrNotApplied,
// and the Limiter skips the background release of a lock never taken.
//
// # The algorithm
//
// Acquire sends the acquisition (SET key token NX PX ttl, through
// redisstore) to every node at once, each bounded by the node timeout, and
// holds the lock when a quorum of N/2+1 nodes granted it while the lock is
// still valid:
//
//	validity = TTL − elapsed − drift,   drift = store.Drift(TTL) = TTL/100 + 2 ms
//
// where elapsed is the time from sending to the quorum-th grant: every key
// of the quorum was set after the start, so expires, by its node's clock, at
// least TTL after it; the drift allowance covers clocks that run at slightly
// different rates. A quorum that answers with no validity left is a failure
// (ErrLate). When the quorum is missed, the nodes that may have taken the
// key are released at once with a context of their own, not the caller's
// (which may be cancelled), bounded by the node timeout.
//
// Release and Extend ask every node too, and need a quorum of nodes that
// still have the caller's token; an Extend must also get it within the new
// validity (ttl − elapsed − drift > 0).
//
// # Node timeout
//
// A node that does not answer within the node timeout counts as failed: a
// tenth of the TTL and at most DefaultNodeTimeout (100 ms) for Acquire and
// Extend, DefaultNodeTimeout for Release (WithNodeTimeout overrides both;
// the caller's context always ends a call sooner). The decision comes as
// soon as the answers settle it, usually with the quorum-th answer, so a
// slow or dead node costs admission at most the node timeout, and a healthy
// deployment answers at the speed of its quorum-th fastest node.
//
// The Redlock description suggests 5 to 50 ms for a 10 s TTL, for a client
// that asks the nodes one after the other. Here they are asked at once and
// the tenth of the TTL keeps the validity from being eaten; the cap is 100
// ms, the throttle.Limiter's default Policy.Timeout, which bounds every
// admission anyway, because the node timeout also counts the wait for one
// of the client's pooled connections: a burst of a few hundred concurrent
// admissions on a small machine queues for tens of milliseconds, and a node
// timeout shorter than that turns a burst into store failures.
//
// # Split votes
//
// When several contenders start at once, each can take some nodes and none
// a quorum (three or more contenders on three nodes, or two when a node is
// down), and all would be refused although nobody holds the key. Acquire
// retries such a split vote a few times: the contender holding the
// lowest-numbered node that answered keeps its nodes and retries soon, the
// others release theirs and retry after a random pause, so that usually
// exactly one wins. A refusal without any node of the caller's is final at
// once.
//
// # What a caller gets
//
//   - Grant.TTL of a granted acquisition is the lock's validity, not the
//     TTL asked for, so that nobody relies on the lock past it. The
//     throttle.Limiter treats Grant.TTL as the key's time to live counted
//     from the moment it sent the request, and subtracts a drift allowance
//     of its own: a lease is valid for TTL − 2·elapsed − drift(TTL) −
//     drift(validity), about elapsed + TTL/100 + 2 ms less than Redlock
//     strictly allows. Both subtractions err on the side of safety (the
//     lease never outlives the quorum's validity), and for TTLs of a second
//     or more the difference does not matter. After an Extend the Limiter
//     computes the validity from the TTL it asked, which is exactly
//     Redlock's. TTLs under about 10 ms leave too little for a round trip
//     and the two allowances, and the Limiter refuses their grants as late.
//   - A refusal (the key is held) comes once a quorum of nodes answered and
//     no quorum can grant. Its Remaining, the Retry-After a client is told,
//     is when a quorum could come free: the (quorum−g)-th shortest remaining
//     time among the nodes held by others, g being the nodes that had
//     granted the caller and were released.
//   - An error (a *QuorumError) when too few nodes answered to decide: the
//     throttle.Limiter then applies Policy.WhenStoreFails. It matches
//     store.ErrNotApplied only when the call surely took nothing anywhere
//     (every failed node refused the connection and none granted).
//   - Release and Extend report OK when a quorum of nodes had the caller's
//     token; an error when ours and the failed nodes could make a quorum
//     (the outcome is unknown); HeldByOther when other tokens hold, or may
//     hold, a quorum; Gone otherwise. Nodes disagree normally: a key
//     expires by each node's own clock, and contenders leave short-lived
//     partial locks on a minority. For the caller both HeldByOther and Gone
//     mean that the lease was lost.
//
// # What Redlock guarantees, and what it does not
//
// With a quorum of nodes up and reachable, at most one caller holds a key
// during its validity, if these assumptions hold:
//
//   - Clocks: every node's clock and the caller's measure time at about the
//     same rate (the drift allowance is 1% plus 2 ms). A node whose clock
//     jumps forward (an operator, an NTP step instead of a slew) expires
//     keys early: with enough such nodes a second caller gets a quorum.
//   - Pauses: the caller acts on the lock only within its validity. A
//     process paused (garbage collection, a stopped VM, swapping) between
//     checking its lease and acting on the resource can act after the lock
//     expired and somebody else took it. No lock service alone prevents
//     that; only the resource can, by checking a fencing token (below).
//   - Delayed restarts: a node that loses its keys (it restarts without
//     persistence, or with fsync lagging behind the acknowledged writes, or
//     fails over to a replica that had not got them) must stay out for at
//     least the longest TTL in use before it serves again. Otherwise a
//     holder's key can vanish from enough nodes for a contender to win a
//     quorum while the first holder's validity runs: with three nodes, two
//     restarted empty at once are enough. Configure either persistence with
//     appendfsync always or a start-up delay longer than the longest TTL
//     (for example a supervisor that waits before it starts redis-server).
//   - Independence: the nodes fail independently: separate machines (or at
//     least processes with separate data), no replication among them, no
//     shared Sentinel failing them over together. A node may be a Sentinel
//     group or a Cluster of its own, but a failover inside it loses keys as
//     a restart does, so the delayed-restart rule applies to it.
//
// One Redis Cluster is not N independent masters. Its masters each own a
// part of the key space: a key lives on exactly one of them, which is one
// node, not a quorum, and it fails over to a replica that may not have the
// key, exactly as a single Redis does. Passing a Cluster's masters as
// separate clients does not work either (each answers MOVED for keys it does
// not own). For Redlock, run N separate Redis deployments.
//
// For throttling and de-duplicating requests, a single Redis with its rare
// double admission after a failover is usually enough, and cheaper; use
// this store when a failed-over Redis must not let a duplicate through.
//
// # Fencing tokens and reentrancy are refused
//
// Requests with Fence or Reentrant fail with an error matching
// store.ErrInvalid (Refuses says so without asking the nodes), and
// throttle.New refuses a Policy that sets Fence or Reentrant over this
// store, so that no such policy can start and then fail open on every
// request.
//
// A fencing token must strictly increase from one holder to the next. Each
// node can count on its own, but Redlock has no agreement among nodes:
// the next holder's quorum may miss the node that numbered the last grant,
// and a node that restarts empty counts again from wherever its clock is.
// Any number derived from the nodes' counters can therefore go backwards,
// which is exactly the case a fencing token exists for (Martin Kleppmann,
// "How to do distributed locking", 2016: Redlock gives no fencing tokens,
// and relies on timing assumptions a correct system should not need). Work
// whose safety depends on one holder at a time should take its fencing
// tokens from a single Redis (redisstore, Policy.Fence) or a consensus
// system (ZooKeeper, etcd), and have the resource check them.
//
// Reentrant holds are counts kept on every node; a node that misses one
// re-entry or release (a timeout) ends up with a different count, and the
// clean-up of a re-entry that missed its quorum would release a hold of the
// outer acquisition, which shares the owner's token.
//
// # Quotas are refused
//
// The store does not implement store.Quota, so throttle.New refuses a
// Quota policy over it with an error matching throttle.ErrInvalid. A quota
// is a count, not a lock: a failover that loses a few charges lets a user
// make a few requests too many, which a rate limit tolerates, so a single
// Redis (redisstore, with Sentinel or Cluster for availability) serves it
// in one round trip. Over Redlock each decision would cost a quorum of
// scripts, and nodes that missed a charge would disagree on the count with
// no way to reconcile it: the quota would be neither exact nor cheaper.
//
// # Cost
//
// An acquisition sends one command per node, in parallel, and waits for
// the quorum-th answer; a refusal too. What it costs the machine grows with
// the number of nodes (N commands instead of one); what it costs in
// latency does not, as long as the client has CPU to spare.
// BenchmarkAdmissionPaired, on a 2-vCPU machine that also runs the five
// local redis-servers, measured with one caller at a time (c1) a p50 of
// 1.3 to 1.4 times one Redis's for Redlock over 3 nodes (about 70 µs
// against 50) and 2 times over 5. With 16 or 64 concurrent callers that
// machine is saturated and the p50 is the wait for the CPU, which grows
// with the work per admission: 3.5 to 3.8 times one Redis's over 3 nodes,
// 6 to 6.6 times over 5. With each node on a machine of its own only the
// client's share of that work (a round trip's system calls per node)
// remains.
package redlock
