package redisalgo

import (
	"crypto/sha1" //nolint:gosec // Redis names scripts by SHA1; no security rests on it.
	"embed"
	"encoding/hex"
	"maps"
)

// lua holds the scripts, each file documenting its keys, args and reply.
//
//go:embed *.lua
var lua embed.FS

var (
	scripts       = map[string]*Script{}
	acquireScript = newScript("acquire")
	releaseScript = newScript("release")
	extendScript  = newScript("extend")
	recordScript  = newScript("record")
	gcraScript    = newScript("gcra")
	gcraMsScript  = newScript("gcra_ms")
)

// Script is a Lua script and its SHA1, which EVALSHA sends.
type Script struct{ Src, SHA string }

func newScript(name string) *Script {
	src, _ := lua.ReadFile(name + ".lua") // embedded: it cannot fail
	sum := sha1.Sum(src)                  //nolint:gosec // see the import
	scripts[name] = &Script{Src: string(src), SHA: hex.EncodeToString(sum[:])}
	return scripts[name]
}

// Scripts returns every script by its file's name (tests).
func Scripts() map[string]*Script { return maps.Clone(scripts) }
