package rueidisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/benchload"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

// BenchmarkAdmission measures one admission against a real redis-server
// started for the run, side by side on the same server:
//
//   - goredis-setnx: raw go-redis SetNX, one command per call (the baseline
//     of the README's ratios);
//   - rueidis-set:   raw rueidis SET NX PX, auto-pipelined;
//   - store:         Store.Acquire (SET NX PX GET);
//   - limiter:       Lock.Acquire on the store (key, token, lease, the
//     Options.Timeout bound);
//   - limiter-release: Lock.Acquire then Lease.Release (two commands).
//
// Key cardinality: every call takes a new key (keys expire after 10 s), so
// every admission succeeds. Concurrency: c1, c16 and c64 run exactly that
// many goroutines sharing b.N calls; ns/op is wall time per call across
// them (the inverse of throughput), p50-ns and p99-ns single-call latency.
// internal/cmd/loadbench prints the same comparison as a table.
func BenchmarkAdmission(b *testing.B) {
	s, srv := newStore(b)
	gc := srv.Client(b)
	rc := newClient(b, srv)
	l, err := throttle.NewLock(s, throttle.LockConfig{Name: "bench", TTL: 10 * time.Second})
	require.NoError(b, err)
	ctx := context.Background()
	var seq atomic.Int64
	next := func() string { return strconv.FormatInt(seq.Add(1), 10) }
	impls := []struct {
		name string
		op   func() error
	}{
		{"goredis-setnx", func() error {
			return gc.SetNX(ctx, storekit.Key("bench", "raw", next()), "token", 10*time.Second).Err()
		}},
		{"rueidis-set", func() error {
			k := storekit.Key("bench", "rueidis", next())
			return rc.Do(ctx, rc.B().Set().Key(k).Value("token").Nx().PxMilliseconds(10000).Build()).Error()
		}},
		{"store", func() error {
			_, err := s.Acquire(ctx, store.Request{Key: storekit.Key("bench", "store", next()), Token: "token", TTL: 10 * time.Second})
			return err
		}},
		{"limiter", func() error { _, err := l.Acquire(ctx, next()); return err }},
		{"limiter-release", func() error {
			lease, err := l.Acquire(ctx, next())
			if err != nil {
				return err
			}
			return lease.Release(ctx)
		}},
	}
	for _, conc := range []int{1, 16, 64} {
		for _, impl := range impls {
			b.Run(fmt.Sprintf("%s/c%d", impl.name, conc), func(b *testing.B) {
				benchload.Bench(b, conc, impl.op)
			})
		}
	}
}

// BenchmarkLimiterPaired compares, interleaved (benchload.Paired) on one
// redis-server at 16 and 64 callers, what a Lock adds to raw rueidis:
//
//   - acquire: raw SET NX PX of a new key ("raw"), then Lock.Acquire of a
//     new id on the store ("limiter"), as the README's ratios count them;
//   - cycle: the raw two-round-trip lock (SET NX PX, then a token-checked
//     release script by EVALSHA) against an Exclusive Lock's Acquire and
//     Lease.Release.
//
// The alone runs (acquire/..., cycle/...) give allocs/op of each; the
// paired runs give limiter/raw, the Lock's throughput relative to raw.
func BenchmarkLimiterPaired(b *testing.B) {
	s, srv := newStore(b)
	rc := newClient(b, srv)
	dedupe, err := throttle.NewLock(s, throttle.LockConfig{Name: "bench", TTL: 10 * time.Second,
		Options: throttle.Options{Timeout: time.Second}})
	require.NoError(b, err)
	exclusive, err := throttle.NewLock(s, throttle.LockConfig{Name: "bench-x", Mode: throttle.Exclusive,
		TTL: 10 * time.Second, Options: throttle.Options{Timeout: time.Second}})
	require.NoError(b, err)
	ctx := context.Background()
	release := rueidis.NewLuaScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)
	var seq atomic.Int64
	next := func() string { return strconv.FormatInt(seq.Add(1), 10) }
	set := func(k string) error {
		return rc.Do(ctx, rc.B().Set().Key(k).Value("token").Nx().PxMilliseconds(10000).Build()).Error()
	}
	pairs := map[string][]benchload.Op{
		"acquire": {
			{Name: "raw", Call: func() error { return set(storekit.Key("bench", "raw", next())) }},
			{Name: "limiter", Call: func() error { _, err := dedupe.Acquire(ctx, next()); return err }},
		},
		"cycle": {
			{Name: "raw", Call: func() error {
				k := storekit.Key("bench", "cycle", next())
				if err := set(k); err != nil {
					return err
				}
				n, err := release.Exec(ctx, rc, []string{k}, []string{"token"}).AsInt64()
				if err == nil && n != 1 {
					err = fmt.Errorf("raw: release %s = %d", k, n)
				}
				return err
			}},
			{Name: "limiter", Call: func() error {
				lease, err := exclusive.Acquire(ctx, next())
				if err != nil {
					return err
				}
				if lease == nil {
					return errors.New("limiter: a new id was not granted")
				}
				return lease.Release(ctx)
			}},
		},
	}
	for _, name := range []string{"acquire", "cycle"} {
		for _, conc := range []int{16, 64} {
			for _, op := range pairs[name] {
				b.Run(fmt.Sprintf("%s/%s/c%d", name, op.Name, conc), func(b *testing.B) { benchload.Bench(b, conc, op.Call) })
			}
			b.Run(fmt.Sprintf("%s/paired/c%d", name, conc), func(b *testing.B) { benchload.Paired(b, conc, pairs[name]) })
		}
	}
}
