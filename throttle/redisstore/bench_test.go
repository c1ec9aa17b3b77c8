package redisstore_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/internal/benchload"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"

	"github.com/stretchr/testify/require"
)

// BenchmarkAdmission measures one admission decision against a real
// redis-server started for the run, for several implementations side by
// side on the same server and client:
//
//   - raw:      client.SetNX(key, token, ttl), the floor (no PTTL, so a
//     rejection does not even say how long to wait);
//   - store:    Store.Acquire as configured by default: SET NX PX alone
//     while refusals are rare, the pipeline below while they are frequent;
//   - set:      Store.Acquire held on SET NX PX alone, whose refusals cost
//     a second round trip (the acquire script);
//   - pipeline: Store.Acquire held on SET NX PX, GET and PTTL in one
//     pipelined round trip;
//   - script:   Store.Acquire running the acquire script with EVALSHA
//     (always used for fenced or reentrant requests).
//
// Key cardinality: "distinct" gives every operation a new key, so every
// admission succeeds (keys expire after 10 s); "hot" uses one key held for
// the whole run, so every admission is rejected.
//
// Concurrency: c1, c16 and c64 run exactly that many goroutines, which
// share b.N operations and one go-redis client (default pool of 10 per
// GOMAXPROCS). ns/op is wall time per operation across all goroutines (the
// inverse of throughput); p50-ns and p99-ns are the latency percentiles of
// single operations. B/op and allocs/op include the benchmark's own key
// (storekit.Key and strconv, about one allocation) for every implementation.
func BenchmarkAdmission(b *testing.B) {
	impls, keyFor := admissionSetup(b)
	for _, card := range []string{"distinct", "hot"} {
		for _, conc := range []int{1, 16, 64} {
			for _, impl := range impls {
				b.Run(fmt.Sprintf("%s/%s/c%d", card, impl.name, conc), func(b *testing.B) {
					benchload.Bench(b, conc, func() error { return impl.check(card, keyFor(card)) })
				})
			}
		}
	}
}

// BenchmarkAdmissionPaired compares the same implementations as
// BenchmarkAdmission, but interleaved (see paired): b.N is the number of
// operations per implementation. It reports each one's wall time per
// operation (raw-ns, store-ns, ...), its latency percentiles (raw-p50-ns,
// raw-p99-ns, ...) and the throughput of the store paths relative to raw
// (store/raw, ...; 1.0 means as fast as a bare SETNX). Key cardinality and
// concurrency as in BenchmarkAdmission.
func BenchmarkAdmissionPaired(b *testing.B) {
	impls, keyFor := admissionSetup(b)
	for _, card := range []string{"distinct", "hot"} {
		for _, conc := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("%s/c%d", card, conc), func(b *testing.B) {
				ops := make([]benchload.Op, len(impls))
				for i, impl := range impls {
					ops[i] = benchload.Op{Name: impl.name, Call: func() error { return impl.check(card, keyFor(card)) }}
				}
				benchload.Paired(b, conc, ops)
			})
		}
	}
}

// BenchmarkAcquireRelease measures a whole lock cycle on a distinct key
// (every acquisition is granted): take the key, then give it back, two
// round trips, for two implementations on the same server and client:
//
//   - raw:   the raw two-round-trip lock, as bsm/redislock takes and frees
//     one: client.SetNX(key, token, ttl), then a token-checked release
//     script (GET, compare, DEL) run with EVALSHA on the key alone;
//   - store: Store.Acquire, then Store.Release, whose script also deletes
//     the key's record and publishes on its release channel.
//
// Concurrency, ns/op, p50-ns and p99-ns as in BenchmarkAdmission; an
// operation is the whole cycle.
func BenchmarkAcquireRelease(b *testing.B) {
	impls := lockCycleSetup(b)
	for _, conc := range []int{1, 16, 64} {
		for _, impl := range impls {
			b.Run(fmt.Sprintf("%s/c%d", impl.Name, conc), func(b *testing.B) {
				benchload.Bench(b, conc, impl.Call)
			})
		}
	}
}

// BenchmarkAcquireReleasePaired compares the implementations of
// BenchmarkAcquireRelease interleaved (see paired), reporting raw-ns,
// store-ns, their latency percentiles and store/raw, the store's
// throughput relative to the raw two-round-trip lock.
func BenchmarkAcquireReleasePaired(b *testing.B) {
	impls := lockCycleSetup(b)
	for _, conc := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("c%d", conc), func(b *testing.B) { benchload.Paired(b, conc, impls) })
	}
}

// admissionImpl is one way of taking a key that the admission benchmarks
// compare.
type admissionImpl struct {
	name string
	op   func(key string) (acquired bool, err error)
}

// check takes key and fails unless the outcome is the one the key
// cardinality implies: every distinct key is acquired, the hot key never.
func (a admissionImpl) check(card, key string) error {
	ok, err := a.op(key)
	if want := card == "distinct"; err == nil && ok != want {
		err = fmt.Errorf("%s: acquired = %v, want %v", a.name, ok, want)
	}
	return err
}

// benchStore returns a store on c whose plain acquisitions take path (see
// redisstore.WithPath), closed at the benchmark's end; without the near
// cache, which would answer the hot key's refusals (BenchmarkNearCache).
func benchStore(b *testing.B, c *redis.Client, path string) *redisstore.Store {
	s := redisstore.New(c, redisstore.WithPath(path), redisstore.WithNearCache(0))
	b.Cleanup(func() { _ = s.Close() })
	<-redisstore.ConfigChecked(s)
	return s
}

// admissionSetup starts a redis-server for the benchmark and returns the
// implementations on one client (raw SETNX, then the store's plain paths)
// and the keys to use for a cardinality: a new key per call for
// "distinct", one key held for the whole run for "hot".
func admissionSetup(b *testing.B) ([]admissionImpl, func(card string) string) {
	_, _, c := newStore(b)
	ctx := context.Background()
	hot := storekit.Key("bench", "hot", "key")
	require.NoError(b, c.Set(ctx, hot, "holder", time.Hour).Err())
	impls := []admissionImpl{
		{"raw", func(key string) (bool, error) { return c.SetNX(ctx, key, "token", 10*time.Second).Result() }},
	}
	for _, path := range []string{"store", "set", "pipeline", "script"} {
		s := benchStore(b, c, path)
		impls = append(impls, admissionImpl{path, func(key string) (bool, error) {
			g, err := s.Acquire(ctx, store.Request{Key: key, Token: "token", TTL: 10 * time.Second})
			return g.Acquired, err
		}})
	}
	var seq atomic.Int64
	keyFor := func(card string) string {
		if card == "hot" {
			return hot
		}
		return storekit.Key("bench", "d", strconv.FormatInt(seq.Add(1), 10))
	}
	return impls, keyFor
}

// rawRelease is the token-checked release of the raw two-round-trip lock:
// it deletes the key if, and only if, it still holds the token.
var rawRelease = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)

// lockCycleSetup starts a redis-server for the benchmark and returns the
// lock cycles that BenchmarkAcquireRelease compares, on one client: each
// takes a new key and frees it, and fails unless both steps succeed.
func lockCycleSetup(b *testing.B) []benchload.Op {
	_, _, c := newStore(b)
	ctx := context.Background()
	// Load the release scripts so that no EVAL fallback lands in a run.
	require.NoError(b, rawRelease.Load(ctx, c).Err())
	require.NoError(b, c.ScriptLoad(ctx, redisstore.Scripts()["release"][0]).Err())
	var seq atomic.Int64
	next := func() string { return storekit.Key("bench", "cycle", strconv.FormatInt(seq.Add(1), 10)) }
	s := benchStore(b, c, "store")
	return []benchload.Op{
		{Name: "raw", Call: func() error {
			k := next()
			ok, err := c.SetNX(ctx, k, "token", 10*time.Second).Result()
			if err != nil || !ok {
				return fmt.Errorf("raw: SETNX %s = %v, %v", k, ok, err)
			}
			if n, err := rawRelease.Run(ctx, c, []string{k}, "token").Int64(); err != nil || n != 1 {
				return fmt.Errorf("raw: release %s = %v, %v", k, n, err)
			}
			return nil
		}},
		{Name: "store", Call: func() error {
			k := next()
			g, err := s.Acquire(ctx, store.Request{Key: k, Token: "token", TTL: 10 * time.Second})
			if err != nil || !g.Acquired {
				return fmt.Errorf("store: acquire %s = %+v, %v", k, g, err)
			}
			if out, err := s.Release(ctx, k, "token"); err != nil || out != store.OK {
				return fmt.Errorf("store: release %s = %v, %v", k, out, err)
			}
			return nil
		}},
	}
}

// BenchmarkLimiterAcquire measures the whole throttle.Lock.Acquire of a
// distinct id (every one is granted; the leases are left to expire) on the
// store's default path, beside raw SetNX of a distinct key ("raw", as in
// BenchmarkAdmission), at 16 and 64 goroutines: alone for allocs/op and
// latency, and paired (see paired) for limiter/raw, the throughput of the
// whole Lock relative to the bare command. Both build their key with
// storekit.Key from a strconv-formatted number.
func BenchmarkLimiterAcquire(b *testing.B) {
	s, _, c := newStore(b)
	l, err := throttle.NewLock(s, throttle.LockConfig{Name: "bench", Options: throttle.Options{Timeout: time.Second}})
	require.NoError(b, err)
	ctx := context.Background()
	var seq atomic.Int64
	impls := []benchload.Op{
		{Name: "raw", Call: func() error {
			k := storekit.Key("bench", "raw", strconv.FormatInt(seq.Add(1), 10))
			if ok, err := c.SetNX(ctx, k, "token", 10*time.Second).Result(); err != nil || !ok {
				return fmt.Errorf("raw: SETNX %s = %v, %v", k, ok, err)
			}
			return nil
		}},
		{Name: "limiter", Call: func() error {
			_, err := l.Acquire(ctx, strconv.FormatInt(seq.Add(1), 10))
			return err
		}},
	}
	for _, conc := range []int{16, 64} {
		for _, impl := range impls {
			b.Run(fmt.Sprintf("%s/c%d", impl.Name, conc), func(b *testing.B) { benchload.Bench(b, conc, impl.Call) })
		}
		b.Run(fmt.Sprintf("paired/c%d", conc), func(b *testing.B) { benchload.Paired(b, conc, impls) })
	}
}

// BenchmarkLimiterCycle measures an Exclusive Lock's whole cycle,
// Lock.Acquire then Lease.Release of a new id ("limiter"), beside the raw
// two-round-trip lock of BenchmarkAcquireRelease ("raw") on one client, at
// 16 and 64 goroutines: alone for allocs/op, and paired (see
// benchload.Paired) for limiter/raw.
func BenchmarkLimiterCycle(b *testing.B) {
	s, _, c := newStore(b)
	l, err := throttle.NewLock(s, throttle.LockConfig{Name: "bench", Mode: throttle.Exclusive, TTL: 10 * time.Second,
		Options: throttle.Options{Timeout: time.Second}})
	require.NoError(b, err)
	ctx := context.Background()
	require.NoError(b, rawRelease.Load(ctx, c).Err())
	var seq atomic.Int64
	impls := []benchload.Op{
		{Name: "raw", Call: func() error {
			k := storekit.Key("bench", "raw", strconv.FormatInt(seq.Add(1), 10))
			if ok, err := c.SetNX(ctx, k, "token", 10*time.Second).Result(); err != nil || !ok {
				return fmt.Errorf("raw: SETNX %s = %v, %v", k, ok, err)
			}
			if n, err := rawRelease.Run(ctx, c, []string{k}, "token").Int64(); err != nil || n != 1 {
				return fmt.Errorf("raw: release %s = %v, %v", k, n, err)
			}
			return nil
		}},
		{Name: "limiter", Call: func() error {
			lease, err := l.Acquire(ctx, strconv.FormatInt(seq.Add(1), 10))
			if err != nil || lease == nil {
				return fmt.Errorf("limiter: acquire = %v, %v", lease, err)
			}
			return lease.Release(ctx)
		}},
	}
	for _, conc := range []int{16, 64} {
		for _, impl := range impls {
			b.Run(fmt.Sprintf("%s/c%d", impl.Name, conc), func(b *testing.B) { benchload.Bench(b, conc, impl.Call) })
		}
		b.Run(fmt.Sprintf("paired/c%d", conc), func(b *testing.B) { benchload.Paired(b, conc, impls) })
	}
}

// BenchmarkAdmit measures a whole Lock.Admit plus Lease.Release on
// distinct keys (every admission succeeds; two round trips per operation:
// one to admit, one to release) at concurrency 16, for the overhead of the
// Lock over the store.
func BenchmarkAdmit(b *testing.B) {
	s, _, _ := newStore(b)
	l, err := throttle.NewLock(s, throttle.LockConfig{Name: "bench"})
	require.NoError(b, err)
	ctx := context.Background()
	var seq atomic.Int64
	benchload.Bench(b, 16, func() error {
		lease, err := l.Admit(ctx, fmt.Sprint(seq.Add(1)))
		if err != nil {
			return err
		}
		return lease.Release(ctx)
	})
}
