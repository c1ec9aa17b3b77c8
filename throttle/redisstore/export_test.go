package redisstore

import "github.com/go-throttle/throttle/internal/redisalgo"

// Hooks for the tests in package redisstore_test.

// ConfigChecked returns a channel closed once the start-up check of
// maxmemory-policy is over (or was cancelled by Close).
var ConfigChecked = redisalgo.Checked

// WithQuotaClock makes AllowN use now() instead of the server's TIME.
var WithQuotaClock = redisalgo.WithClock

// WithPath holds plain acquisitions and quota charges on one path: "set",
// "pipeline", "script" or "store" (the default: the choice by refusals).
var WithPath = redisalgo.WithPath

// WithWatchTimeout bounds Watch's wait for a subscription and each
// background call (one second by default); Close waits twice as long.
var WithWatchTimeout = redisalgo.WithWatchTimeout

// ErrNotReplicated is matched by the error of an acquisition that too few
// replicas acknowledged (WithReplicaAck).
var ErrNotReplicated = redisalgo.ErrNotReplicated

// Scripts returns the embedded scripts' sources by name, each first of a
// pair whose second is "" (a store learns the SHA1s from SCRIPT LOAD).
func Scripts() map[string][2]string {
	m := map[string][2]string{}
	for name, s := range redisalgo.Scripts() {
		m[name] = [2]string{s.Src}
	}
	return m
}
