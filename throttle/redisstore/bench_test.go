package redisstore_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-throttle/throttle/internal/benchload"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"
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

// BenchmarkAdmissionPaired compares the same three implementations as
// BenchmarkAdmission, but interleaved: rounds of 200 operations per
// implementation, in turn and in rotating order, so that load from other
// processes on a shared machine hits all three alike. b.N is the number of
// operations per implementation. It reports each one's wall time per
// operation (raw-ns, pipeline-ns, script-ns) and the throughput of the store
// paths relative to raw (pipeline/raw, script/raw; 1.0 means as fast as a
// bare SETNX). Key cardinality and concurrency as in BenchmarkAdmission.
func BenchmarkAdmissionPaired(b *testing.B) {
	impls, keyFor := admissionSetup(b)
	for _, card := range []string{"distinct", "hot"} {
		for _, conc := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("%s/c%d", card, conc), func(b *testing.B) {
				spent := make([]time.Duration, len(impls))
				const round = 200
				for done := 0; done < b.N; done += round {
					n := min(round, b.N-done)
					for j := range impls {
						i := (j + done/round) % len(impls)
						t0 := time.Now()
						if _, err := benchload.Run(conc, n, func() error { return impls[i].check(card, keyFor(card)) }); err != nil {
							b.Fatal(err)
						}
						spent[i] += time.Since(t0)
					}
				}
				per := func(i int) float64 { return float64(spent[i]) / float64(b.N) }
				for i, impl := range impls {
					b.ReportMetric(per(i), impl.name+"-ns")
					if i > 0 {
						b.ReportMetric(per(0)/per(i), impl.name+"/"+impls[0].name)
					}
				}
			})
		}
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

// admissionSetup starts a redis-server for the benchmark and returns the
// three implementations on one client (raw SETNX, the SET+PTTL pipeline,
// the acquire script) and the keys to use for a cardinality: a new key per
// call for "distinct", one key held for the whole run for "hot".
func admissionSetup(b *testing.B) ([]admissionImpl, func(card string) string) {
	_, _, c := newStore(b)
	ctx := context.Background()
	pipe, script := redisstore.New(c), redisstore.New(c)
	script.SetScriptedPlain(true)
	b.Cleanup(func() { _, _ = pipe.Close(), script.Close() })
	hot := store.Key("bench", "hot", "key")
	if err := c.Set(ctx, hot, "holder", time.Hour).Err(); err != nil {
		b.Fatal(err)
	}
	acquire := func(s *redisstore.Store) func(string) (bool, error) {
		return func(key string) (bool, error) {
			g, err := s.Acquire(ctx, store.Request{Key: key, Token: "token", TTL: 10 * time.Second})
			return g.Acquired, err
		}
	}
	impls := []admissionImpl{
		{"raw", func(key string) (bool, error) { return c.SetNX(ctx, key, "token", 10*time.Second).Result() }},
		{"pipeline", acquire(pipe)},
		{"script", acquire(script)},
	}
	var seq atomic.Int64
	keyFor := func(card string) string {
		if card == "hot" {
			return hot
		}
		return store.Key("bench", "d", strconv.FormatInt(seq.Add(1), 10))
	}
	return impls, keyFor
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
	benchload.Bench(b, 16, func() error {
		lease, err := l.Admit(ctx, fmt.Sprint(seq.Add(1)))
		if err != nil {
			return err
		}
		return lease.Release(ctx)
	})
}
