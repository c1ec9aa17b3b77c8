// Package redlock keeps throttle locks on a quorum of independent Redis
// masters (Redlock), so that a lock survives the crash, restart or failover
// of a minority of them, where one Redis may let a second holder in. One
// Redis is usually enough to throttle requests, and cheaper.
//
// Use an odd number of nodes, at least three. Fencing tokens and reentrancy
// are refused, and quotas and records not offered. See docs/stores.md in the
// repository for the algorithm and the assumptions it rests on.
package redlock
