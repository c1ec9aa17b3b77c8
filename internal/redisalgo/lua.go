package redisalgo

import (
	"crypto/sha1" //nolint:gosec // Redis names scripts by SHA1; no security rests on it.
	_ "embed"
	"encoding/hex"
)

// The Lua scripts: each .lua file documents its keys, arguments and reply.
var (
	//go:embed acquire.lua
	acquireSrc string
	//go:embed release.lua
	releaseSrc string
	//go:embed extend.lua
	extendSrc string
	//go:embed record.lua
	recordSrc string
	//go:embed gcra.lua
	gcraSrc string
	//go:embed gcra_ms.lua
	gcraMsSrc string

	acquireScript = newScript(acquireSrc)
	releaseScript = newScript(releaseSrc)
	extendScript  = newScript(extendSrc)
	recordScript  = newScript(recordSrc)
	gcraScript    = newScript(gcraSrc)
	gcraMsScript  = newScript(gcraMsSrc)
)

// Script is a Lua script and its SHA1, which EVALSHA sends.
type Script struct{ Src, SHA string }

func newScript(src string) *Script {
	sum := sha1.Sum([]byte(src)) //nolint:gosec // see the import
	return &Script{Src: src, SHA: hex.EncodeToString(sum[:])}
}

// Scripts returns every script by its file's name (tests).
func Scripts() map[string]*Script {
	return map[string]*Script{
		"acquire": acquireScript, "release": releaseScript, "extend": extendScript,
		"record": recordScript, "gcra": gcraScript, "gcra_ms": gcraMsScript,
	}
}
