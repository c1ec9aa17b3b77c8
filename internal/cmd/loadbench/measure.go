package main

import (
	"runtime"
	"slices"
	"time"

	"github.com/go-throttle/throttle/internal/benchload"
)

// cell is one measurement: one operation at one concurrency.
type cell struct {
	opsPerSec float64
	p50, p99  time.Duration
	allocs    float64 // heap allocations per operation, whole process
}

// measure runs n calls of op over conc goroutines (benchload.Run) and
// returns its throughput, latency percentiles and allocations per call.
// Allocations are counted across the process (runtime.MemStats.Mallocs),
// so they include the client's background goroutines, which is what a
// service pays; the load runner itself allocates only its latency slices,
// less than one allocation per thousand calls.
func measure(conc, n int, op func() error) (cell, error) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	lat, err := benchload.Run(conc, n, op)
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	if err != nil {
		return cell{}, err
	}
	slices.Sort(lat)
	return cell{
		opsPerSec: float64(len(lat)) / elapsed.Seconds(),
		p50:       lat[len(lat)/2],
		p99:       lat[len(lat)*99/100],
		allocs:    float64(after.Mallocs-before.Mallocs) / float64(len(lat)),
	}, nil
}
