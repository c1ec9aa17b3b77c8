// Package redisalgo is the one Redis store algorithm behind redisstore
// (go-redis) and rueidisstore (rueidis): each package is an adapter of a Redis
// client to Conn, the small seam this package needs, and the Lua scripts, in
// .lua files embedded here, are the atomic steps both stores run.
package redisalgo
