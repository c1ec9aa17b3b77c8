// Package rueidisstore is redisstore's Store on a github.com/redis/rueidis
// client, whose automatic pipelining lets many goroutines share round trips:
// pick it when many requests are admitted at once. Both keep the same data,
// so they may share one Redis; only WithReplicaAck is redisstore's alone.
package rueidisstore
