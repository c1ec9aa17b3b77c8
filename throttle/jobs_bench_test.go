package throttle_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

// benchBackends gives the benchmarks a memory store and a Redis store on a
// redis-server of their own (loopback, so a round trip is tens of µs).
func benchBackends(b *testing.B) []backend {
	return []backend{memBackend(b), redisBackend(b)}
}

// BenchmarkDoUncontended measures the whole Do path (acquire, start and stop
// the refresher, release) around work that returns at once. Every iteration
// takes a distinct key (key cardinality b.N), so there is never contention.
// Redis: 2 round trips per op (acquire script, release script); the
// refresher never fires because the 30 s lease outlives the work.
// "serial" is one goroutine; "parallel" is GOMAXPROCS goroutines. Fencing
// is off: a fence counter per distinct key would measure the memory store's
// bounded counter table filling up rather than the Do path.
func BenchmarkDoUncontended(b *testing.B) {
	for _, be := range benchBackends(b) {
		l := newLock(b, be.store, throttle.LockConfig{Name: "bench", Mode: throttle.Exclusive})
		noop := func(context.Context) error { return nil }
		ctx := context.Background()
		b.Run(be.name+"/serial", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if err := l.Do(ctx, strconv.Itoa(i), noop); err != nil {
					require.NoError(b, err) // only on failure: testify's b.Helper call would be timed
				}
			}
		})
		b.Run(be.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				prefix := storekit.NewToken() // distinct keys per goroutine too
				for i := 0; pb.Next(); i++ {
					if err := l.Do(ctx, prefix+strconv.Itoa(i), noop); err != nil {
						assert.NoError(b, err) // not require: this is not the benchmark's goroutine
						return
					}
				}
			})
		})
	}
}

// BenchmarkHandOver measures the hand-over latency of one key between two
// owners: a waiter blocks in a waiting Acquire, the holder releases 20 ms
// later, and the time from the start of the release call to the waiter's
// return is recorded. One key, one holder, one waiter (concurrency 2).
//
// "notify" uses the store's Notifier (the release wakes the waiter);
// "poll" hides it (struct{ store.Store }) so the waiter only retries
// with the default backoff, ExponentialJitter(10ms, 1s). The median and 99th
// percentile are reported as p50-ns and p99-ns; ns/op includes the 20 ms hold
// and is not the figure of interest.
func BenchmarkHandOver(b *testing.B) {
	for _, be := range benchBackends(b) {
		for _, mode := range []string{"notify", "poll"} {
			store := be.store
			// After its first try a notified waiter sets up its watch and
			// tries once more before it sleeps; a polling one sleeps at once.
			tries := uint64(2)
			if mode == "poll" {
				store, tries = pollOnly{be.store}, 1
			}
			b.Run(be.name+"/"+mode, func(b *testing.B) {
				benchHandOver(b, store, tries)
			})
		}
	}
}

func benchHandOver(b *testing.B, st store.Store, tries uint64) {
	c := throttle.LockConfig{Name: "handover", Mode: throttle.Exclusive, TTL: 30 * time.Second}
	holder := newLock(b, st, c)
	c.Wait = 10 * time.Second
	waiter := newLock(b, st, c)
	ctx := context.Background()
	type result struct {
		at    time.Time
		lease *throttle.Lease
		err   error
	}
	var lat []time.Duration
	got := make(chan result)
	for b.Loop() {
		lease, err := holder.Acquire(ctx, "k")
		require.NoError(b, err)
		before := waiter.Stats().Rejected
		go func() {
			l, err := waiter.Acquire(ctx, "k")
			got <- result{time.Now(), l, err}
		}()
		for waiter.Stats().Rejected < before+tries {
			time.Sleep(20 * time.Microsecond)
		}
		time.Sleep(20 * time.Millisecond)
		start := time.Now()
		require.NoError(b, lease.Release(ctx))
		r := <-got
		require.NoError(b, r.err)
		lat = append(lat, r.at.Sub(start))
		require.NoError(b, r.lease.Release(ctx))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2]), "p50-ns")
	b.ReportMetric(float64(lat[(len(lat)*99)/100]), "p99-ns")
}
