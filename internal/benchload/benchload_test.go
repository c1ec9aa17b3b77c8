package benchload

import (
	"testing"
	"time"
)

func TestMedianRatio(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		d := make([]time.Duration, len(v))
		for i, x := range v {
			d[i] = time.Duration(x) * time.Millisecond
		}
		return d
	}
	for _, c := range []struct {
		base, x []time.Duration
		want    float64
	}{
		// One round where x was hit by a burst (ratio 0.1) does not move
		// the median, as it would the ratio of the totals (0.6).
		{ms(10, 10, 10), ms(10, 100, 10), 1},
		{ms(10, 20), ms(20, 20), 0.75},
		{ms(10), ms(0), 0},
		{nil, nil, 0},
	} {
		if got := medianRatio(c.base, c.x); got != c.want {
			t.Errorf("medianRatio(%v, %v) = %v, want %v", c.base, c.x, got, c.want)
		}
	}
}

// TestPaired checks that Paired reports a median ratio near 1 for two
// equal ops.
func TestPaired(t *testing.T) {
	op := func() error { time.Sleep(10 * time.Microsecond); return nil }
	r := testing.Benchmark(func(b *testing.B) {
		Paired(b, 1, []Op{{"a", op}, {"b", op}})
	})
	med := r.Extra["b/a-med"]
	if med < 0.5 || med > 2 {
		t.Fatalf("b/a-med = %v for two equal ops (extra: %v)", med, r.Extra)
	}
}
