package throttle_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// BenchmarkQuotaMemory measures one Quota.Allow over memstore, the whole
// decision a middleware asks for: the key built from the quota's name and
// the id, one map lookup and write under a shard lock.
// Key cardinality: 65536 users taken in turn (ids built before the timer),
// each coming back while its quota is still partly spent; the quota
// (10000 an hour) admits every request, so every one writes. (A user the
// store has never seen costs more: its new entry samples the map for
// expired ones, as BenchmarkAcquireRelease's distinct keys do.)
// Concurrency: run it with -cpu 1 for one goroutine (the target: under
// 300 ns and 3 allocs), or higher -cpu for GOMAXPROCS goroutines
// (b.RunParallel). No store round trip: the store is in process.
func BenchmarkQuotaMemory(b *testing.B) {
	q := newQuota(b, memstore.New(), throttle.QuotaConfig{Name: "bench"})
	rate := throttle.Rate{Limit: 10_000, Window: time.Hour}
	const users = 1 << 16
	ids := make([]string, users)
	for i := range ids {
		ids[i] = "user-" + strconv.Itoa(i)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			d, err := q.Allow(ctx, ids[i&(users-1)], rate, 1)
			if err != nil || !d.Allowed {
				// Not require: this is not the benchmark's goroutine.
				assert.Fail(b, "refused", "%+v, %v", d, err)
				return
			}
			i++
		}
	})
}
