package overload_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-throttle/throttle/throttle/overload"
)

// reportService is DESIGN.md §6's GET /api/report as sim_test.go simulates
// it: four slots, 50 ms of work each and up to 5 ms more.
func reportService() *service {
	svc := newService(4, 50*time.Millisecond)
	svc.jitter = 5 * time.Millisecond
	return svc
}

// TestProbeKeepsSlotsBusy: under a steady 2× overload the probes of the
// base latency (every 30 to 37.5 s) take the limit below the four slots
// once: the probe that halves it (5 to 3) proves the base clean, measured
// with fewer requests in flight than keep the service busy, and the probes
// after it run as many as keep every slot busy (4). The base stays the
// unloaded one.
func TestProbeKeepsSlotsBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, overload.Config{})
		s := newSim(l, reportService())
		s.run(0, 64, 10*time.Second)
		s.run(1, 160, 120*time.Second)
		s.end()
		dips, at4 := 0, 0 // runs of samples with the limit under 4; samples at 4 after the first run
		under := false
		for _, x := range s.limits {
			if x.at < 10*time.Second {
				continue
			}
			if x.limit < 4 && !under {
				dips++
			}
			under = x.limit < 4
			if x.limit == 4 && dips > 0 && !under {
				at4++
			}
		}
		t.Logf("%d dips under 4, then %d samples at 4; base %v", dips, at4, l.Stats().BaseLatency)
		if dips != 1 {
			t.Errorf("the limit went under the 4 slots %d times, want once: the probe that proves the base clean", dips)
		}
		if at4 == 0 {
			t.Error("no probe at 4 after it")
		}
		if base := l.Stats().BaseLatency; base > 55*time.Millisecond {
			t.Errorf("base latency %v, want at most 55ms", base)
		}
	})
}

// TestInflatedBaseIsMeasuredAgain: a limiter that starts under a 5×
// overload measures its first base latency with requests waiting for
// each other in the service (its limit starts at 8, for four slots), some
// 90 ms for 50 ms of work. A probe at what keeps the service busy would
// measure the same inflated base (throughput × base is then the requests
// that inflated it) and keep it for good; the probes halve the limit until
// one proves the base clean, and the base comes down to the unloaded one.
func TestInflatedBaseIsMeasuredAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, overload.Config{})
		s := newSim(l, reportService())
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
