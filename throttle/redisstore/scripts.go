package redisstore

import (
	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/internal/redislua"
)

// The Lua sources live in internal/redislua, shared with rueidisstore.
var (
	acquireSrc = redislua.Acquire
	releaseSrc = redislua.Release
	extendSrc  = redislua.Extend
	gcraSrc    = redislua.GCRA
	recordSrc  = redislua.Record
)

// The scripts run with EVALSHA, which sends the 40-byte SHA1 instead of the
// source; redis.Script.Run falls back to EVAL (which also caches the script)
// when the server answers NOSCRIPT, after a restart, a failover to a replica
// that never saw the script, or SCRIPT FLUSH. That fallback costs one extra
// round trip once per server.
var (
	acquireScript = redis.NewScript(acquireSrc)
	extendScript  = redis.NewScript(extendSrc)
	gcraScript    = redis.NewScript(gcraSrc)
	recordScript  = redis.NewScript(recordSrc)

	// releaseScript is not a bare script: its Run passes the lock's
	// record as a second key, so that Release deletes the record with the
	// lock (see releaser).
	releaseScript = releaser{script: redis.NewScript(releaseSrc)}
)

// Replies of the release, extend and record scripts.
const (
	replyOK          = redislua.OK
	replyHeldByOther = redislua.HeldByOther
	replyGone        = redislua.Gone
	replyStillHeld   = redislua.StillHeld
)
