package memstore

import (
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

// benchKeys is the key cardinality of BenchmarkAcquireRelease/distinct.
const benchKeys = 1 << 16

func benchKeySet() []string {
	keys := make([]string, benchKeys)
	for i := range keys {
		keys[i] = store.Key(throttle.DefaultPrefix, "bench", "user-"+strconv.Itoa(i))
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
				tok := store.NewToken()
				i := int(next.Add(7919))
				for pb.Next() {
					key := keys[i&(benchKeys-1)]
					i++
					g, err := s.Acquire(bg, store.Request{Key: key, Token: tok, TTL: time.Minute, Fence: fence})
					if err != nil {
						b.Fatal(err)
					}
					if g.Acquired {
						s.Release(bg, key, tok)
					}
				}
			})
		})
	}
	b.Run("hot-key", func(b *testing.B) {
		s := New()
		key := store.Key(throttle.DefaultPrefix, "bench", "hot")
		var won atomic.Int64
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			tok := store.NewToken()
			for pb.Next() {
				g, err := s.Acquire(bg, store.Request{Key: key, Token: tok, TTL: time.Minute})
				if err != nil {
					b.Fatal(err)
				}
				if g.Acquired {
					won.Add(1)
					s.Release(bg, key, tok)
				}
			}
		})
		b.ReportMetric(float64(won.Load())/float64(b.N), "won/op")
	})
}

// BenchmarkMemoryPerKey reports the live heap a store takes per held key
// (bytes/key), map overhead included, for 1<<16 keys of about 30 bytes,
// plain and with fence counters. The key and token strings are the caller's
// and are not counted: add their lengths. One goroutine.
func BenchmarkMemoryPerKey(b *testing.B) {
	keys := benchKeySet()
	tok := store.NewToken()
	for _, fence := range []bool{false, true} {
		name := "plain-65536-keys"
		if fence {
			name = "fenced-65536-keys"
		}
		b.Run(name, func(b *testing.B) {
			var perKey float64
			for range b.N {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				s := New()
				for _, k := range keys {
					s.Acquire(bg, store.Request{Key: k, Token: tok, TTL: time.Minute, Fence: fence})
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				perKey = float64(after.HeapAlloc-before.HeapAlloc) / benchKeys
				runtime.KeepAlive(s)
			}
			b.ReportMetric(perKey, "bytes/key")
		})
	}
}
