package overload_test

import (
	"context"
	"testing"

	"github.com/go-throttle/throttle/throttle/overload"
)

// BenchmarkPermit measures the permit path: Acquire of a free permit plus
// End, on context.Background, with no Observer. One goroutine, then every
// CPU at once (RunParallel).
func BenchmarkPermit(b *testing.B) {
	ctx := context.Background()
	b.Run("serial", func(b *testing.B) {
		l := newLimiter(b, overload.Config{})
		b.ReportAllocs()
		for b.Loop() {
			p, err := l.Acquire(ctx, overload.Normal)
			if err != nil {
				b.Fatal(err)
			}
			p.End()
		}
	})
	b.Run("parallel", func(b *testing.B) {
		l := newLimiter(b, overload.Config{MinLimit: 1000})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				p, err := l.Acquire(ctx, overload.Normal)
				if err != nil {
					b.Error(err)
					return
				}
				p.End()
			}
		})
	})
}
