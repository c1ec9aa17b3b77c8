package redisstore

import (
	"context"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/internal/redislua"
)

// The Lua sources live in internal/redislua, shared with rueidisstore.
var (
	acquireSrc = redislua.Acquire
	releaseSrc = redislua.Release
	extendSrc  = redislua.Extend
	gcraSrc    = redislua.GCRA
	gcraMsSrc  = redislua.GCRAMillis
	recordSrc  = redislua.Record
)

// The scripts run with EVALSHA, which sends the 40-byte SHA1 instead of the
// source, and fall back to EVAL (which also caches the script) when the
// server answers NOSCRIPT, after a restart, a failover to a replica that
// never saw the script, or SCRIPT FLUSH. That fallback costs one extra
// round trip once per server.
var (
	acquireScript = newScript(acquireSrc)
	releaseScript = newScript(releaseSrc)
	extendScript  = newScript(extendSrc)
	gcraScript    = newScript(gcraSrc)
	gcraMsScript  = newScript(gcraMsSrc)
	recordScript  = redis.NewScript(recordSrc)
)

// script is a Lua script of the hot paths (acquire, release, extend), whose
// command run builds by hand: its SHA1 and source are boxed into interface
// values once, here, where redis.Script.Run boxes them, copies the keys and
// the arguments into a new list on every call, and tests every reply for
// NOSCRIPT. Store.Release measured 17 allocations per call through
// Script.Run and 10 through run (a raw one-key Script.Run: 11).
type script struct {
	*redis.Script     // for the WithReplicaAck pipeline (replicaAck.eval) and Hash
	sha, src      any // the SHA1 and the source, boxed
}

func newScript(src string) script {
	s := redis.NewScript(src)
	return script{Script: s, sha: s.Hash(), src: src}
}

// run sends the script with EVALSHA, or with EVAL when the server answers
// NOSCRIPT, as redis.Script.Run does, and returns the command made by
// newCmd (redis.NewCmd, redis.NewIntCmd: whichever reads the script's reply
// with the fewest allocations). args is the whole command, laid out by the
// caller with two free slots first: args[0] and args[1] (the command name
// and the SHA1) are filled in here, args[2] is the number of keys as a
// string constant ("1", "2", which box without allocating) and the keys
// follow from args[3], which run tells a ClusterClient to route by.
func run[C redis.Cmder](ctx context.Context, c redis.UniversalClient, s script, newCmd func(context.Context, ...any) C, args []any) C {
	args[0], args[1] = "evalsha", s.sha
	cmd := newCmd(ctx, args...)
	cmd.SetFirstKeyPos(3)
	_ = c.Process(ctx, cmd)
	if !noScript(cmd.Err()) {
		return cmd
	}
	// The EVALSHA command keeps its own arguments (a hook may still look
	// at them); the fallback, once per server, copies them.
	args = slices.Clone(args)
	args[0], args[1] = "eval", s.src
	cmd = newCmd(ctx, args...)
	cmd.SetFirstKeyPos(3)
	_ = c.Process(ctx, cmd)
	return cmd
}

// noScript reports whether err is Redis's NOSCRIPT: EVALSHA of a script
// the server does not have. It tests err for nil first because
// redis.HasErrorPrefix allocates even for nil (its errors.As target
// escapes): one allocation per test on the path that succeeds.
func noScript(err error) bool { return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") }

// Replies of the release, extend and record scripts.
const (
	replyOK          = redislua.OK
	replyHeldByOther = redislua.HeldByOther
	replyGone        = redislua.Gone
	replyStillHeld   = redislua.StillHeld
)
