package overload_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-throttle/throttle/throttle/overload"
)

// TestOverload drives DESIGN.md §6's GET /api/report (four slots, 50 ms of
// work each, and up to 5 ms more at random: about 76 requests a second)
// open loop at 0.8×, 2× and 5× 80 requests a second, with 0.8× after each
// overload: nothing is shed below capacity; under overload at least 90%
// of 80 a second is answered within 10× the unloaded median and the
// answers' p99 stays within 3× the unloaded p99 (55 ms at most); the
// limit falls under overload, and is back within 10% of its unloaded
// value within 10 s after it; the base latency stays the unloaded median
// (probes under overload measure no queueing).
func TestOverload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const capacity, unloaded = 80.0, 55 * time.Millisecond
		svc := newService(4, 50*time.Millisecond)
		svc.jitter = 5 * time.Millisecond
		l := newLimiter(t, overload.Config{})
		s := newSim(l, svc)
		phases := []struct {
			load float64
			d    time.Duration
		}{{0.8, 20 * time.Second}, {2, 30 * time.Second}, {0.8, 15 * time.Second}, {5, 30 * time.Second}, {0.8, 15 * time.Second}}
		var starts []time.Duration
		for i, ph := range phases {
			starts = append(starts, time.Since(s.t0))
			s.run(i, ph.load*capacity, ph.d)
			if base := l.Stats().BaseLatency; base > unloaded {
				t.Errorf("after %v×: base latency %v, want at most %v", ph.load, base, unloaded)
			}
		}
		starts = append(starts, time.Since(s.t0))
		s.end()

		if st := s.stats(0, 10*unloaded); st.shed != 0 {
			t.Errorf("0.8×: %d shed, want none", st.shed)
		}
		idle := s.limit(starts[0]+phases[0].d/2, starts[1])
		for _, i := range []int{1, 3} {
			st := s.stats(i, 10*unloaded)
			goodput := float64(st.good) / phases[i].d.Seconds() / capacity
			t.Logf("%v×: goodput %.1f%% of capacity, p50 %v, p99 %v, %d shed; limit %d (unloaded %d)",
				phases[i].load, 100*goodput, st.p50, st.p99, st.shed, s.limit(starts[i]+time.Second, starts[i+1]), idle)
			if goodput < 0.9 {
				t.Errorf("%v×: goodput %.1f%% of capacity, want at least 90%%", phases[i].load, 100*goodput)
			}
			if st.p99 > 3*unloaded {
				t.Errorf("%v×: p99 %v, want at most %v", phases[i].load, st.p99, 3*unloaded)
			}
			if l := s.limit(starts[i]+time.Second, starts[i+1]); l >= idle {
				t.Errorf("%v×: limit %d under overload, want below its unloaded %d", phases[i].load, l, idle)
			}
			back := s.within(starts[i+1], idle)
			t.Logf("%v×: limit back within 10%% of %d after %v", phases[i].load, idle, back)
			if back < 0 || back > 10*time.Second {
				t.Errorf("%v×: limit back within 10%% of %d after %v, want within 10s", phases[i].load, idle, back)
			}
		}
	})
}

// TestLimitRisesWhenLatencyFlat: a service that takes all it gets at the
// same latency sees the limit rise to its demand, and then sheds nothing.
func TestLimitRisesWhenLatencyFlat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSim(newLimiter(t, overload.Config{}), newService(1000, 50*time.Millisecond))
		s.run(0, 1600, 3*time.Second) // 80 in flight
		s.run(1, 1600, 2*time.Second)
		s.end()
		l := s.limit(3*time.Second, 5*time.Second)
		t.Logf("limit %d; %d shed while it rose", l, s.stats(0, time.Second).shed)
		if l < 80 || l > 200 {
			t.Errorf("limit %d, want at least the 80 in flight and at most 200", l)
		}
		if st := s.stats(1, time.Second); st.shed != 0 {
			t.Errorf("%d shed once the limit rose, want none", st.shed)
		}
	})
}

// TestSlowerServiceIsMeasuredAgain: a service that becomes slower for good
// (a slow dependency), at a load it can still take, first looks
// overloaded; the limit probes its base latency again and rises back.
func TestSlowerServiceIsMeasuredAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, overload.Config{})
		svc := newService(16, 50*time.Millisecond)
		s := newSim(l, svc)
		s.run(0, 80, 5*time.Second)
		svc.work.Store(int64(100 * time.Millisecond))
		s.run(1, 80, 5*time.Second)
		base := l.Stats().BaseLatency
		s.run(2, 80, 5*time.Second)
		s.end()
		t.Logf("base latency %v; shed %d while it was measured, %d after", base, s.stats(1, time.Second).shed, s.stats(2, time.Second).shed)
		remeasured(t, s, base, 100*time.Millisecond)
	})
}

// remeasured checks that a slower service's base latency was measured
// again (base is want) and that nothing was shed in phase 2 of s, after it.
func remeasured(t *testing.T, s *sim, base, want time.Duration) {
	t.Helper()
	if base != want {
		t.Errorf("base latency %v, want %v", base, want)
	}
	if st := s.stats(2, time.Second); st.shed != 0 {
		t.Errorf("%d shed once the base latency was measured again, want none", st.shed)
	}
}

// TestSomewhatSlowerServiceIsMeasuredAgain: a service 1.3× slower (65 ms
// for 50) is over the target (62.5 ms) but not far enough over it for the
// stale trigger (a gradient under 0.75): the limit falls to 5, under the
// 5.2 in flight that 80 requests a second now need, and sheds a few. The
// next periodic probe measures the new base, even though the requests
// that ran alone before the change would have given it samples: a window
// slower than they were, at no more in flight, shows them out of date.
func TestSomewhatSlowerServiceIsMeasuredAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, overload.Config{})
		svc := newService(16, 50*time.Millisecond)
		s := newSim(l, svc)
		s.run(0, 80, 40*time.Second) // a probe 30 to 37.5 s in, from free samples
		svc.work.Store(int64(65 * time.Millisecond))
		s.run(1, 80, 35*time.Second) // the next, 60 to 75 s in
		s.run(2, 80, 5*time.Second)
		s.end()
		base := l.Stats().BaseLatency
		t.Logf("base latency %v; shed %d after the change, %d after the probe", base, s.stats(1, time.Second).shed, s.stats(2, time.Second).shed)
		remeasured(t, s, base, 65*time.Millisecond)
	})
}

// TestInflatedBaseIsMeasuredAgain: a limiter that starts under a 5×
// overload measures its first base latency with requests waiting for
// each other in the service (its limit starts at 8, for four slots with
// up to 5 ms of jitter): some 90 ms for 50 ms of work. The probes, each
// at half the limit, measure it again until no request waits for another,
// and the base comes down to the unloaded one. (A probe that ran as many
// requests as keep the service busy, throughput × base, would measure the
// inflated base again, those being the requests that inflated it, and
// keep it for good.)
func TestInflatedBaseIsMeasuredAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, overload.Config{})
		svc := newService(4, 50*time.Millisecond)
		svc.jitter = 5 * time.Millisecond
		s := newSim(l, svc)
		s.run(0, 400, 5*time.Second)
		inflated := l.Stats().BaseLatency
		s.run(1, 400, 115*time.Second)
		s.end()
		base := l.Stats().BaseLatency
		t.Logf("base latency %v after 5 s, %v after 120 s", inflated, base)
		if inflated < 60*time.Millisecond {
			t.Errorf("base latency %v after 5 s: not inflated, the test tests nothing", inflated)
		}
		if base > 55*time.Millisecond {
			t.Errorf("base latency %v after 120 s, want at most 55ms", base)
		}
	})
}
