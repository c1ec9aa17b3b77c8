// Package redlock keeps throttle locks on a quorum of independent Redis
// masters (Redlock), so that a lock survives the crash, restart or failover
// of a minority of them, where one Redis may let a second holder in. One
// Redis is usually enough to throttle requests, and cheaper.
//
// Acquire asks every node at once and holds the lock when a quorum of N/2+1
// granted it, for TTL − elapsed − drift (1% of the TTL plus 2 ms, for clocks
// at slightly different rates). Each node gets a tenth of the TTL, at most
// 100 ms. A missed quorum is released on every node, even after the caller's
// cancellation; contenders that split the nodes retry at random.
//
// The promise holds while a quorum is up, clocks run at about the same rate,
// the holder acts only within the validity, and nodes fail independently
// (separate servers, no replication; one Redis Cluster is one node). Use an
// odd number of nodes, at least three, and clients with
// ContextTimeoutEnabled. Fencing tokens and reentrancy are refused, and
// quotas and records not offered: nodes count on their own and drift apart.
package redlock
