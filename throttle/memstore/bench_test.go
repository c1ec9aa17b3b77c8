package memstore

import (
	"errors"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

// benchKeys is the key cardinality of BenchmarkAcquireRelease/distinct.
const benchKeys = 1 << 16

func benchKeySet() []string {
	keys := make([]string, benchKeys)
	for i := range keys {
		keys[i] = storekit.Key("throttle", "bench", "user-"+strconv.Itoa(i))
	}
	return keys
}

// BenchmarkAcquireRelease measures one Acquire plus one Release at GOMAXPROCS
// goroutines (b.RunParallel): over 1<<16 distinct keys, each goroutine
// walking its own stride so that they rarely meet; and over one hot key that
// every goroutine contends for (most Acquires are refused).
func BenchmarkAcquireRelease(b *testing.B) {
	for _, fence := range []bool{false, true} {
		name := "distinct-65536-keys"
		if fence {
			name += "-fenced"
		}
		b.Run(name, func(b *testing.B) {
			s := New()
			keys := benchKeySet()
			var next atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				tok := storekit.NewToken()
				i := int(next.Add(7919))
				for pb.Next() {
					key := keys[i&(benchKeys-1)]
					i++
					g, err := s.Acquire(bg, store.Request{Key: key, Token: tok, TTL: time.Minute, Fence: fence})
					if err != nil {
						assert.Fail(b, err.Error()) // checked first: testify's helpers cost more than the store
						return
					}
					if g.Acquired {
						_, _ = s.Release(bg, key, tok)
					}
				}
			})
		})
	}
	b.Run("hot-key", func(b *testing.B) {
		s := New()
		key := storekit.Key("throttle", "bench", "hot")
		var won atomic.Int64
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			tok := storekit.NewToken()
			for pb.Next() {
				g, err := s.Acquire(bg, store.Request{Key: key, Token: tok, TTL: time.Minute})
				if err != nil {
					assert.Fail(b, err.Error())
					return
				}
				if g.Acquired {
					won.Add(1)
					_, _ = s.Release(bg, key, tok)
				}
			}
		})
		b.ReportMetric(float64(won.Load())/float64(b.N), "won/op")
	})
}

// BenchmarkMemoryPerKey reports the live heap a store takes per key
// ("B/key"), everything included: the map slots and their spare room, and
// the bytes of the key and of the token, which the store keeps (a Limiter
// makes a new key string and a new token for every acquisition). Keys have
// the shape of a real policy's, storekit.Key("throttle", "submit", <user id>),
// 28 bytes; tokens come from storekit.NewToken, 31 bytes. Shapes:
//
//   - held: distinct keys held, no fences;
//   - held-fenced: distinct keys held, each with its fence counter;
//   - counters-only: distinct keys taken with a fence and released, so
//     only their counters (and key bytes) stay, for the fence TTL;
//   - worst: the counters of as many keys as fit, then as many other keys
//     held without fence as fit: the most a store of that bound keeps
//     (B/key per held key).
//
// MiB is the whole store. The default-bound sizes tell the documented
// worst case; run them with -benchtime=1x (every iteration builds a new
// store of a million keys or two).
func BenchmarkMemoryPerKey(b *testing.B) {
	type phase struct{ fence, release bool }
	held, fenced, counters := phase{}, phase{fence: true}, phase{fence: true, release: true}
	shapes := []struct {
		name   string
		phases []phase
	}{
		{"held", []phase{held}},
		{"held-fenced", []phase{fenced}},
		{"counters-only", []phase{counters}},
		{"worst", []phase{counters, held}},
	}
	for _, n := range []int{1 << 16, defaultMaxKeys} {
		for _, shape := range shapes {
			b.Run(shape.name+"-"+strconv.Itoa(n), func(b *testing.B) {
				var heap, keys int
				for range b.N {
					var before, after runtime.MemStats
					runtime.GC()
					runtime.ReadMemStats(&before)
					s := New(WithMaxKeys(n)) // the keys are of one policy
					for i, p := range shape.phases {
						keys = fill(b, s, n, i*n, p.fence, p.release)
					}
					runtime.GC()
					runtime.ReadMemStats(&after)
					runtime.KeepAlive(s)
					heap = int(int64(after.HeapAlloc) - int64(before.HeapAlloc))
				}
				b.ReportMetric(float64(heap)/float64(keys), "B/key")
				b.ReportMetric(float64(heap)/(1<<20), "MiB")
				b.ReportMetric(float64(keys), "keys")
			})
		}
	}
}

// fill acquires the keys of users first to first+n-1 in s, releasing each
// at once when release is set, and returns how many got an entry: the bound
// of s is split over its shards, so a few shards fill first.
func fill(b *testing.B, s *Store, n, first int, fence, release bool) int {
	stored := 0
	for i := range n {
		key := storekit.Key("throttle", "submit", strconv.Itoa(1_000_000_000+first+i))
		tok := storekit.NewToken()
		g, err := s.Acquire(bg, store.Request{Key: key, Token: tok, TTL: time.Hour, Fence: fence})
		if errors.Is(err, errFull) {
			continue
		}
		if err != nil || !g.Acquired {
			require.Failf(b, "Acquire failed", "%q: %+v, %v", key, g, err)
		}
		if release {
			_, _ = s.Release(bg, key, tok)
		}
		stored++
	}
	require.GreaterOrEqual(b, stored, n*3/4, "keys stored of %d", n)
	return stored
}

// BenchmarkAcquireSteady measures one Acquire of a new key on one goroutine
// in a steady state: 1<<18 keys taken in turn with a TTL of 20 ms, so that
// every acquisition finds its key expired (it came round after 1<<18
// others) and the store holds the keys of the last 20 ms, the ones that
// expire meanwhile being removed as new ones come: what a store does for a
// stream of new clients. Keys and tokens are built before the timer starts.
func BenchmarkAcquireSteady(b *testing.B) {
	const n = 1 << 18
	keys := make([]string, n)
	for i := range keys {
		keys[i] = storekit.Key("throttle", "bench", "user-"+strconv.Itoa(i))
	}
	tok := storekit.NewToken()
	s := New()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		g, err := s.Acquire(bg, store.Request{Key: keys[i&(n-1)], Token: tok, TTL: 20 * time.Millisecond})
		if err != nil || !g.Acquired {
			require.Failf(b, "Acquire failed", "acquisition %d: %+v, %v", i, g, err)
		}
	}
}

// BenchmarkFill measures filling a new store of the default bound with
// 900,000 keys held for an hour, one goroutine, keys and tokens built
// before the timer starts: the time per key ("ns/key"), the slowest single
// Acquire ("max-µs", where a growing table would show as a pause), and the
// live heap per held key ("B/key").
func BenchmarkFill(b *testing.B) {
	const n = 900_000
	keys := make([]string, n)
	for i := range keys {
		keys[i] = storekit.Key("throttle", "submit", strconv.Itoa(1_000_000_000+i))
	}
	tok := storekit.NewToken()
	var worst, total time.Duration
	var heap int64
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s := New()
		start := time.Now()
		for _, key := range keys {
			t0 := time.Now()
			g, err := s.Acquire(bg, store.Request{Key: key, Token: tok, TTL: time.Hour})
			worst = max(worst, time.Since(t0))
			if err != nil || !g.Acquired {
				require.Failf(b, "Acquire failed", "%q: %+v, %v", key, g, err)
			}
		}
		total += time.Since(start)
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(s)
		heap = int64(after.HeapAlloc) - int64(before.HeapAlloc)
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N*n), "ns/key")
	b.ReportMetric(float64(worst.Microseconds()), "max-µs")
	b.ReportMetric(float64(heap)/n, "B/key")
}

// BenchmarkQuotaOneOff measures AllowN on one goroutine where every charge
// makes a new entry: 1<<16 keys in turn under a rate whose cell (60µs) has
// expired long before a key comes round, as for a stream of new users, so
// every call takes room in the quota table and samples it for the expired.
func BenchmarkQuotaOneOff(b *testing.B) {
	s, keys := New(), benchKeySet()
	r := store.Rate{Limit: 1_000_000, Window: time.Minute, Burst: 1_000_000}
	ctx := b.Context()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if d, err := s.AllowN(ctx, keys[i&(benchKeys-1)], r, 1); err != nil || !d.Allowed {
			require.FailNowf(b, "refused", "%+v, %v", d, err)
		}
	}
}
