package redisalgo

import (
	"context"
	"embed"
	"maps"
	"math"
	"sync/atomic"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
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
	gcraAllScript = newScript("gcra_all", "strict")
	deleteScript  = newScript("delete")
)

// Script is a Lua script, which EVALSHA names by its SHA1.
type Script struct {
	Src string
	id  int // its index in a Digests
}

// newScript registers the script of file name.lua, after the files of libs,
// which only define functions for it.
func newScript(name string, libs ...string) *Script {
	var src []byte
	for _, f := range append(libs, name) {
		b, _ := lua.ReadFile(f + ".lua") // embedded: it cannot fail
		src = append(src, b...)
	}
	scripts[name] = &Script{Src: string(src), id: len(scripts)}
	return scripts[name]
}

// Digests holds the SHA1 of each script as SCRIPT LOAD returned it on one
// client: Redis computes them (hashing here would panic under
// GODEBUG=fips140=only). Each adapter of a store keeps one.
type Digests struct{ sha []atomic.Pointer[digest] }

// digest is a script's SHA1, also as a command argument: go-redis takes
// its arguments as interface values, and boxing the string on every call
// would cost an allocation.
type digest struct {
	sha string
	arg any
}

// NewDigests returns Digests that know no script yet.
func NewDigests() *Digests { return &Digests{sha: make([]atomic.Pointer[digest], len(scripts))} }

// SHA returns s's digest, asking load (SCRIPT LOAD of s.Src on the node of
// key) until it answers; calls racing to be first may each load it. ""
// (load's answer when Redis refused SCRIPT LOAD) is kept too: the adapter
// then sends EVAL, one round trip, instead of asking again on every call.
// A server that lacks the script later (restarted, or a Cluster node that
// never ran it) answers EVALSHA with NOSCRIPT: the adapter then sends EVAL,
// which runs the script and caches it on that node in one round trip.
func (d *Digests) SHA(ctx context.Context, s *Script, key string,
	load func(ctx context.Context, key, src string) (string, error)) (string, error) {
	if p := d.sha[s.id].Load(); p != nil {
		return p.sha, nil
	}
	sha, err := load(ctx, key, s.Src)
	if err == nil {
		d.sha[s.id].Store(&digest{sha: sha, arg: sha})
	}
	return sha, err
}

// Arg returns the digest SHA returned for s as an interface value, made
// once; nil before SHA has one.
func (d *Digests) Arg(s *Script) any {
	if p := d.sha[s.id].Load(); p != nil {
		return p.arg
	}
	return nil
}

// Scripts returns every script by its file's name (tests).
func Scripts() map[string]*Script { return maps.Clone(scripts) }

// ttlCeiling is the largest time.Duration of whole milliseconds: TTLs
// saturate there rather than overflow.
const ttlCeiling = math.MaxInt64 / time.Millisecond * time.Millisecond

// millis rounds a positive duration up to whole milliseconds, PX's unit.
func millis(d time.Duration) int64 {
	ms := d / time.Millisecond
	if d%time.Millisecond > 0 {
		ms++
	}
	return int64(min(ms, ttlCeiling/time.Millisecond))
}

// duration is the inverse of millis.
func duration(ms int64) time.Duration {
	return time.Duration(min(ms, int64(ttlCeiling/time.Millisecond))) * time.Millisecond
}

// remaining turns a PTTL into store.Grant.Remaining: -1 without expiry, else
// at least 1ms (PTTL -2: the key expired meanwhile).
func remaining(pttl int64) time.Duration {
	if pttl == -1 {
		return -1
	}
	return duration(max(pttl, 1))
}

// outcome decodes a reply of the release (release true), extend or record
// script: 1 done, 2 held by another token, 3 gone, 4 (release only) still
// held; ok is false for a reply the script never gives.
func outcome(n int64, release bool) (out store.Outcome, ok bool) {
	if n < 1 || n > 4 || n == 4 && !release {
		return 0, false
	}
	return [...]store.Outcome{1: store.OK, 2: store.HeldByOther, 3: store.Gone, 4: store.StillHeld}[n], true
}

// decision decodes a GCRA script's reply v (see gcra.lua): the reset R when
// allowed, -(R+1) when refused, in µs like the interval t.
func decision(v, t, burst, cost int64) store.Decision {
	us := func(n int64) time.Duration { return time.Duration(n) * time.Microsecond }
	tau, reset := t*burst, v
	if v < 0 {
		reset = -v - 1
	}
	d := store.Decision{Allowed: v >= 0, Remaining: int(max(tau-reset, 0) / t), ResetAfter: us(reset)}
	if v < 0 {
		d.RetryAfter = us(reset + cost*t - tau)
	}
	return d
}
