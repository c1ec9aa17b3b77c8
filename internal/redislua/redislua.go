// Package redislua holds the Lua scripts that the Redis stores run, so that
// every store built on a Redis client (redisstore on go-redis, rueidisstore
// on rueidis) runs the same atomic steps and answers in the same shapes.
// Each .lua file documents its keys, arguments and reply; the stores wrap
// the sources in their client's script type, which sends EVALSHA and falls
// back to EVAL after NOSCRIPT.
//
// The sources are kept in .lua files so that they can be read, linted and
// tested as Lua; go:embed compiles them into the binary.
package redislua

import _ "embed"

// Script sources.
var (
	// Acquire takes a lock, plain, fenced or reentrant (acquire.lua).
	//go:embed acquire.lua
	Acquire string

	// Release frees a lock its token holds, with its record, and
	// publishes on its release channel (release.lua).
	//go:embed release.lua
	Release string

	// Extend sets the time to live of a lock its token holds
	// (extend.lua).
	//go:embed extend.lua
	Extend string

	// GCRA decides a quota request with the generic cell rate algorithm,
	// on the server's clock (gcra.lua).
	//go:embed gcra.lua
	GCRA string

	// GCRAMillis decides a quota request whose emission interval is a
	// whole number of milliseconds, keeping the TAT as the key's expiry
	// (gcra_ms.lua): one read and one write, no TIME and no GET.
	//go:embed gcra_ms.lua
	GCRAMillis string

	// Record stores the response of a lock's holder, expiring with the
	// lock, and wakes its waiters (record.lua).
	//go:embed record.lua
	Record string
)

// Replies of the release, extend and record scripts.
const (
	OK          = 1 // done
	HeldByOther = 2 // another token holds the key
	Gone        = 3 // nobody holds the key
	StillHeld   = 4 // release only: a reentrant hold went down but not to zero
)
