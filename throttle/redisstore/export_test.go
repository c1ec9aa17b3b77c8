package redisstore

import "time"

// Hooks for the tests in package redisstore_test.

// SetScriptedPlain makes plain acquisitions use the acquire script instead
// of SET NX (alone or pipelined, see SetPlainPath), so that tests and
// benchmarks cover every path.
func (s *Store) SetScriptedPlain(on bool) { s.scriptedPlain = on }

// Scripts returns the embedded scripts' sources and the SHA1s go-redis
// sends with EVALSHA.
func Scripts() map[string][2]string {
	return map[string][2]string{
		"acquire": {acquireSrc, acquireScript.Hash()},
		"release": {releaseSrc, releaseScript.Hash()},
		"extend":  {extendSrc, extendScript.Hash()},
		"gcra":    {gcraSrc, gcraScript.Hash()},
		"gcra_ms": {gcraMsSrc, gcraMsScript.Hash()},
		"record":  {recordSrc, recordScript.Hash()},
	}
}

// SetQuotaClock makes AllowN pass now() to the GCRA script instead of
// letting it read the server's TIME, so that a test can drive a quota with
// a fake clock. Call it before the store is used.
func (s *Store) SetQuotaClock(now func() time.Time) { s.quotaNow = now }

// SetPlainPath holds plain acquisitions on one path: "set" (SET NX PX
// alone, a refusal asking GET and PTTL in a second round trip),
// "pipeline" (SET NX PX, GET and PTTL in one pipeline) or "store" (the
// default: the choice by refusals). SetScriptedPlain takes precedence.
// Call it before the store is used.
func (s *Store) SetPlainPath(path string) {
	switch path {
	case "set":
		s.plainPath = pathSet
	case "pipeline":
		s.plainPath = pathPipeline
	case "store":
		s.plainPath = pathAuto
	default:
		panic("redisstore: SetPlainPath: unknown path " + path)
	}
}

// SetQuotaPath holds quota charges on one path: "set" (SET NX PX first,
// the script only when the key exists), "script" (the script alone) or
// "store" (the default: the choice by how often keys exist). Call it
// before the store is used.
func (s *Store) SetQuotaPath(path string) {
	switch path {
	case "set":
		s.quotaPath = quotaSetFirst
	case "script":
		s.quotaPath = quotaScript
	case "store":
		s.quotaPath = quotaAuto
	default:
		panic("redisstore: SetQuotaPath: unknown path " + path)
	}
}
