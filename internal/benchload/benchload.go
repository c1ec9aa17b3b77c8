// Package benchload is the load generator shared by the benchmarks that
// drive a store with concurrent operations: it runs a number of calls over
// a number of goroutines, records the latency of each call and reports
// latency percentiles, so that every benchmark measures and names its
// figures the same way.
package benchload

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Run makes n calls of op spread over conc goroutines, which take their
// calls from one shared counter, and returns the latency of every call that
// succeeded (in no particular order) and the first error. After an error
// the goroutines stop at their next call, so a failing run ends soon
// instead of repeating the failure n times.
func Run(conc, n int, op func() error) ([]time.Duration, error) {
	conc = max(conc, 1)
	var (
		next    atomic.Int64
		stop    atomic.Bool
		mu      sync.Mutex
		all     = make([]time.Duration, 0, max(n, 0))
		errOnce sync.Once
		first   error
		wg      sync.WaitGroup
	)
	for range conc {
		wg.Go(func() {
			mine := make([]time.Duration, 0, n/conc+1)
			for !stop.Load() && next.Add(1) <= int64(n) {
				t0 := time.Now()
				if err := op(); err != nil {
					errOnce.Do(func() { first = err })
					stop.Store(true)
					break
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return all, first
}

// Report sorts lat and reports its median and 99th percentile as the
// metrics <prefix>p50-ns and <prefix>p99-ns, the names all the benchmarks
// use so that their figures stay comparable. It returns the median in
// nanoseconds, for ratios between variants; it reports nothing and returns
// 0 if lat is empty.
func Report(b *testing.B, prefix string, lat []time.Duration) (p50 float64) {
	b.Helper()
	if len(lat) == 0 {
		return 0
	}
	slices.Sort(lat)
	p50 = float64(lat[len(lat)/2])
	b.ReportMetric(p50, prefix+"p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100]), prefix+"p99-ns")
	return p50
}

// Bench is a whole benchmark body: it reports allocations, times b.N calls
// of op over conc goroutines (see Run), fails the benchmark on the first
// error and reports the p50-ns and p99-ns latency of one call (see Report).
// ns/op is then wall time per call across all goroutines, the inverse of
// throughput.
func Bench(b *testing.B, conc int, op func() error) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	lat, err := Run(conc, b.N, op)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	Report(b, "", lat)
}
