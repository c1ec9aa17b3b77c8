package rueidisstore

import (
	"github.com/redis/rueidis"

	"github.com/go-throttle/throttle/internal/redislua"
)

// The scripts are redisstore's (internal/redislua), so that both stores
// take, free and record keys in the same atomic steps and can share one
// Redis. rueidis sends EVALSHA and falls back to EVAL (which caches the
// script) when the server answers NOSCRIPT, after a restart, a failover or
// SCRIPT FLUSH.
var (
	acquireScript    = rueidis.NewLuaScript(redislua.Acquire)
	releaseScript    = rueidis.NewLuaScript(redislua.Release)
	extendScript     = rueidis.NewLuaScript(redislua.Extend)
	gcraScript       = rueidis.NewLuaScript(redislua.GCRA)
	gcraMillisScript = rueidis.NewLuaScript(redislua.GCRAMillis)
	recordScript     = rueidis.NewLuaScript(redislua.Record)
)
