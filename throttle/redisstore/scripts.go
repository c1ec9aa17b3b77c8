package redisstore

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// The Lua sources are kept in .lua files so that they can be read, linted
// and tested as Lua; go:embed compiles them into the binary.
var (
	//go:embed acquire.lua
	acquireSrc string
	//go:embed release.lua
	releaseSrc string
	//go:embed extend.lua
	extendSrc string
	//go:embed gcra.lua
	gcraSrc string
	//go:embed record.lua
	recordSrc string
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
	replyOK          = 1
	replyHeldByOther = 2
	replyGone        = 3
	replyStillHeld   = 4
)
