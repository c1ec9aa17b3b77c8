package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle/store"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/redis/go-redis/v9"
)

// BenchmarkAdmission measures one admission decision against a real
// redis-server started for the run, for three implementations side by side
// on the same server and client:
//
//   - raw:      client.SetNX(key, token, ttl), the floor (no PTTL, so a
//     rejection does not even say how long to wait);
//   - pipeline: Store.Acquire on the default path, SET NX PX + PTTL in one
//     pipelined round trip (approach b);
//   - script:   Store.Acquire running the acquire script with EVALSHA
//     (approach a; always used for fenced or reentrant requests).
//
// Key cardinality: "distinct" gives every operation a new key, so every
// admission succeeds (keys expire after 10 s); "hot" uses one key held for
// the whole run, so every admission is rejected.
//
// Concurrency: c1, c16 and c64 run exactly that many goroutines, which
// share b.N operations and one go-redis client (default pool of 10 per
// GOMAXPROCS). Every admission is one round trip. ns/op is wall time per
// operation across all goroutines (the inverse of throughput); p50-ns and
// p99-ns are the latency percentiles of single operations.
func BenchmarkAdmission(b *testing.B) {
	_, srv, c := newStore(b)
	ctx := context.Background()
	s := redisstore.New(c)
	defer s.Close()
	hot := store.Key("bench", "hot", "key")
	if err := c.Set(ctx, hot, "holder", time.Hour).Err(); err != nil {
		b.Fatal(err)
	}
	_ = srv
	var seq atomic.Int64
	impls := []struct {
		name string
		op   func(key string) (bool, error)
	}{
		{"raw", func(key string) (bool, error) {
			return c.SetNX(ctx, key, "token", 10*time.Second).Result()
		}},
		{"pipeline", func(key string) (bool, error) {
			s.SetScriptedPlain(false)
			g, err := s.Acquire(ctx, store.Request{Key: key, Token: "token", TTL: 10 * time.Second})
			return g.Acquired, err
		}},
		{"script", func(key string) (bool, error) {
			g, err := scripted.Acquire(ctx, store.Request{Key: key, Token: "token", TTL: 10 * time.Second})
			return g.Acquired, err
		}},
	}
	scripted = redisstore.New(c)
	scripted.SetScriptedPlain(true)
	defer scripted.Close()
	for _, card := range []string{"distinct", "hot"} {
		for _, conc := range []int{1, 16, 64} {
			for _, impl := range impls {
				b.Run(fmt.Sprintf("%s/%s/c%d", card, impl.name, conc), func(b *testing.B) {
					want := card == "distinct"
					keyFor := func() string {
						if card == "hot" {
							return hot
						}
						return store.Key("bench", "d", fmt.Sprint(seq.Add(1)))
					}
					runConcurrent(b, conc, func() error {
						ok, err := impl.op(keyFor())
						if err == nil && ok != want {
							err = fmt.Errorf("acquired = %v, want %v", ok, want)
						}
						return err
					})
				})
			}
		}
	}
}

// scripted is the store on the script path, shared by the benchmark's
// closures.
var scripted *redisstore.Store

// runConcurrent runs b.N calls of op on conc goroutines and reports the p50
// and p99 latency of one call.
func runConcurrent(b *testing.B, conc int, op func() error) {
	b.ReportAllocs()
	per := (b.N + conc - 1) / conc
	lat := make([][]time.Duration, conc)
	for i := range lat {
		lat[i] = make([]time.Duration, 0, per)
	}
	var failed atomic.Value
	var wg sync.WaitGroup
	b.ResetTimer()
	for g := range conc {
		n := per
		if rest := b.N - g*per; rest < n {
			n = max(rest, 0)
		}
		wg.Go(func() {
			for range n {
				t0 := time.Now()
				if err := op(); err != nil {
					failed.Store(err)
					return
				}
				lat[g] = append(lat[g], time.Since(t0))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) > 0 {
		b.ReportMetric(float64(all[len(all)/2]), "p50-ns")
		b.ReportMetric(float64(all[len(all)*99/100]), "p99-ns")
	}
}

// BenchmarkAdmit measures a whole Limiter.Admit plus Lease.Release on
// distinct keys (every admission succeeds; two round trips per operation:
// one to admit, one to release) at concurrency 16, for the overhead of the
// Limiter over the store.
func BenchmarkAdmit(b *testing.B) {
	s, _, _ := newStore(b)
	l, err := throttle.New(s, throttle.Policy{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var seq atomic.Int64
	runConcurrent(b, 16, func() error {
		lease, err := l.Admit(ctx, fmt.Sprint(seq.Add(1)))
		if err != nil {
			return err
		}
		return lease.Release(ctx)
	})
}

var _ redis.UniversalClient = (*redis.Client)(nil)
