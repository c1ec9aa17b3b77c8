package redisstore

import "github.com/go-throttle/throttle/internal/redisalgo"

// Hooks for the tests in package redisstore_test.

// ConfigChecked returns a channel closed once the start-up check of
// maxmemory-policy is over (or was cancelled by Close).
var ConfigChecked = redisalgo.Checked

// WithQuotaClock makes AllowN use now() instead of the server's TIME.
var WithQuotaClock = redisalgo.WithClock

// WithPath holds plain acquisitions and quota charges on one path: "set"
// (SET NX alone, a refusal asking the script; quota charges try SET NX
// first), "pipeline" (SET NX, GET and PTTL in one round trip), "script"
// (the scripts alone) or "store" (the default: the choice by refusals).
func WithPath(path string) Option {
	p, ok := map[string]redisalgo.Path{"store": redisalgo.Auto, "set": redisalgo.Set,
		"pipeline": redisalgo.Lookup, "script": redisalgo.Scripted}[path]
	if !ok {
		panic("redisstore: WithPath: unknown path " + path)
	}
	return redisalgo.WithPath(p)
}

// Scripts returns the embedded scripts' sources and the SHA1s sent with
// EVALSHA, by name.
func Scripts() map[string][2]string {
	m := map[string][2]string{}
	for name, s := range redisalgo.Scripts() {
		m[name] = [2]string{s.Src, s.SHA}
	}
	return m
}
