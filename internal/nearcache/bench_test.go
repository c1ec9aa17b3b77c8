package nearcache

import (
	"strconv"
	"sync/atomic"
	"testing"
)

// BenchmarkAcquireRelease is what a lock's acquisition and release of a
// new key cost the cache when nothing was refused, as the Redis stores
// pay it: a missed Get, a Stamp, then the release's Forget ("forget"),
// beside the Invalidate that Forget replaced ("invalidate").
func BenchmarkAcquireRelease(b *testing.B) {
	for _, name := range []string{"forget", "invalidate"} {
		b.Run(name, func(b *testing.B) {
			c, _ := newCache(16384)
			var seq atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					k := "bench:{" + strconv.FormatInt(seq.Add(1), 10) + "}"
					if _, _, ok := c.Get(k); ok {
						b.Fatal("a new key was refused")
					}
					c.Stamp(k)
					if name == "forget" {
						c.Forget(k)
					} else {
						c.Invalidate(k)
					}
				}
			})
		})
	}
}
