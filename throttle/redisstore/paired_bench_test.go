package redisstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle/store"

	"github.com/go-throttle/throttle/throttle/redisstore"
)

// BenchmarkAdmissionPaired compares the same three implementations as
// BenchmarkAdmission (raw SETNX, SET+PTTL pipeline, acquire script), but
// interleaved: rounds of 200 operations per implementation, in turn, so that
// load from other processes on a shared machine hits all three alike. b.N is
// the number of operations per implementation. It reports each one's
// wall time per operation (raw-ns, pipeline-ns, script-ns) and the
// throughput of the store paths relative to raw (pipeline/raw, script/raw;
// 1.0 means as fast as a bare SETNX). Key cardinality and concurrency as in
// BenchmarkAdmission: distinct keys (every admission succeeds) or one hot
// key (every admission rejected), 1, 16 or 64 goroutines.
func BenchmarkAdmissionPaired(b *testing.B) {
	_, _, c := newStore(b)
	ctx := context.Background()
	pipe := redisstore.New(c)
	script := redisstore.New(c)
	script.SetScriptedPlain(true)
	defer pipe.Close()
	defer script.Close()
	hot := store.Key("bench", "hot", "key")
	if err := c.Set(ctx, hot, "holder", time.Hour).Err(); err != nil {
		b.Fatal(err)
	}
	var seq atomic.Int64
	type impl func(key string) (bool, error)
	impls := []impl{
		func(key string) (bool, error) { return c.SetNX(ctx, key, "token", 10*time.Second).Result() },
		func(key string) (bool, error) {
			g, err := pipe.Acquire(ctx, store.Request{Key: key, Token: "token", TTL: 10 * time.Second})
			return g.Acquired, err
		},
		func(key string) (bool, error) {
			g, err := script.Acquire(ctx, store.Request{Key: key, Token: "token", TTL: 10 * time.Second})
			return g.Acquired, err
		},
	}
	for _, card := range []string{"distinct", "hot"} {
		for _, conc := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("%s/c%d", card, conc), func(b *testing.B) {
				want := card == "distinct"
				var spent [3]time.Duration
				const round = 200
				for done := 0; done < b.N; done += round {
					n := min(round, b.N-done)
					for j := range impls {
						i := (j + done/round) % len(impls) // rotate the order
						t0 := time.Now()
						if err := runN(conc, n, func() error {
							key := hot
							if want {
								key = store.Key("bench", "d", fmt.Sprint(seq.Add(1)))
							}
							ok, err := impls[i](key)
							if err == nil && ok != want {
								err = fmt.Errorf("acquired = %v, want %v", ok, want)
							}
							return err
						}); err != nil {
							b.Fatal(err)
						}
						spent[i] += time.Since(t0)
					}
				}
				per := func(i int) float64 { return float64(spent[i]) / float64(b.N) }
				b.ReportMetric(per(0), "raw-ns")
				b.ReportMetric(per(1), "pipeline-ns")
				b.ReportMetric(per(2), "script-ns")
				b.ReportMetric(per(0)/per(1), "pipeline/raw")
				b.ReportMetric(per(0)/per(2), "script/raw")
			})
		}
	}
}

// runN runs n calls of op spread over conc goroutines and returns the first
// error.
func runN(conc, n int, op func() error) error {
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := op(); err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	err, _ := failed.Load().(error)
	return err
}
