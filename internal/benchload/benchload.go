// Package benchload is the load generator shared by the benchmarks that
// drive a store with concurrent operations: it runs a number of calls over
// a number of goroutines, records the latency of each call and reports
// latency percentiles, so that every benchmark measures and names its
// figures the same way.
package benchload

import (
	"math/rand/v2"
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

// Op is one of the operations Paired compares.
type Op struct {
	Name string
	Call func() error
}

// Paired runs b.N calls of every op over conc goroutines, interleaved:
// rounds of 200 calls per op, in a new random order each round (from a
// fixed seed), so that load from other processes on a shared machine hits
// all of them alike, and no op always runs after the same one (with a
// rotating order, two runs of one op measured 10–25% apart at one caller:
// what runs just before a round sets how warm the CPU and the scheduler
// find it). It
// reports each op's wall time per call (<name>-ns), its latency percentiles
// (<name>-p50-ns, <name>-p99-ns) and, for every op after the first, its
// throughput relative to the first (<name>/<first>) and the median of that
// ratio over the rounds (<name>/<first>-med). ns/op is reported as 0: the
// figures above say it per op.
//
// The median of the rounds' ratios is the paired estimate: each round's
// ratio compares the two ops under the same conditions, a few milliseconds
// apart, and the median ignores the rounds that a burst of load from
// elsewhere hit in one op's turn only. The ratio of the totals, on a
// shared machine, is moved by such bursts: on one client and one core's
// worth of Redis, a round trip's time doubles when the scheduler parks
// the client's thread instead of letting it spin.
func Paired(b *testing.B, conc int, ops []Op) {
	b.Helper()
	spent := make([]time.Duration, len(ops))
	lat := make([][]time.Duration, len(ops))
	// perRound[i][r] is op i's time in round r.
	perRound := make([][]time.Duration, len(ops))
	const round = 200
	// A fixed seed: every run shuffles alike.
	rng := rand.New(rand.NewPCG(1, 2))
	order := make([]int, len(ops))
	for i := range order {
		order[i] = i
	}
	for done := 0; done < b.N; done += round {
		n := min(round, b.N-done)
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, i := range order {
			t0 := time.Now()
			l, err := Run(conc, n, ops[i].Call)
			if err != nil {
				b.Fatal(err)
			}
			took := time.Since(t0)
			spent[i] += took
			perRound[i] = append(perRound[i], took)
			lat[i] = append(lat[i], l...)
		}
	}
	per := func(i int) float64 { return float64(spent[i]) / float64(b.N) }
	for i, op := range ops {
		b.ReportMetric(per(i), op.Name+"-ns")
		Report(b, op.Name+"-", lat[i])
		if i > 0 {
			b.ReportMetric(per(0)/per(i), op.Name+"/"+ops[0].Name)
			b.ReportMetric(medianRatio(perRound[0], perRound[i]), op.Name+"/"+ops[0].Name+"-med")
		}
	}
	b.ReportMetric(0, "ns/op")
}

// medianRatio returns the median over rounds r of base[r]/x[r]: x's
// throughput relative to base's, round by round.
func medianRatio(base, x []time.Duration) float64 {
	ratios := make([]float64, 0, len(x))
	for r := range x {
		if x[r] > 0 {
			ratios = append(ratios, float64(base[r])/float64(x[r]))
		}
	}
	if len(ratios) == 0 {
		return 0
	}
	slices.Sort(ratios)
	if n := len(ratios); n%2 == 0 {
		return (ratios[n/2-1] + ratios[n/2]) / 2
	}
	return ratios[len(ratios)/2]
}
