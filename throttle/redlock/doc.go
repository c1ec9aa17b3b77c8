// Package redlock keeps throttle locks on a quorum of independent Redis
// masters (Redlock), so that a lock survives the crash, restart or failover
// of a minority of them, where one Redis (redisstore) may let a second
// holder in. One Redis is usually enough to throttle requests, and cheaper:
// a command per admission instead of one per node.
//
// Acquire sends SET NX PX to every node at once and holds the lock when a
// quorum of N/2+1 granted it in time: validity = TTL − elapsed − drift,
// where drift (storekit.Drift, 1% of the TTL plus 2 ms) covers clocks running
// at slightly different rates. A missed quorum is released on every node,
// with a context that the caller's cancellation does not end. A node gets a
// tenth of the TTL, at most the 100 ms a throttle limiter gives a call, so
// that a slow node fails before it eats the validity; the decision comes at
// the quorum-th answer. Contenders that split the nodes retry: the holder
// of the lowest node keeps its part, the others pause at random.
//
// A key has at most one holder during its validity while a quorum is up, if
// clocks run at about the same rate, the holder acts only within the
// validity, a node that lost its keys (restart without fsync'ed
// persistence, failover to a lagging replica) stays out for the longest TTL
// before it serves again, and nodes fail independently: separate servers,
// no replication (one Redis Cluster is one node). Use an odd number of
// nodes, at least three, and go-redis clients with ContextTimeoutEnabled
// and DialerRetries: 1, so that a node that is slow or down is seen at once.
//
// Fencing tokens and reentrancy are refused (see Refuses), and quotas and
// records are not offered: nodes count on their own, a quorum may miss the
// node that numbered the last grant or took the last charge, and counts
// drift apart when a node misses a call. Use one Redis for those.
package redlock
