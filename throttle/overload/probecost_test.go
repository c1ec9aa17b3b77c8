package overload_test

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-throttle/throttle/throttle/overload"
)

// TestProbeCost drives the simulated GET /api/report (four slots, 50 ms
// of work each) through overloadbench's timeline: 0.8×, 2×, 0.8× for 15 s,
// 5×, 0.8× for 15 s, 30 s phases. Every simulated millisecond it counts
// the idle slots, apart while the limit probes its base latency and
// otherwise, and logs each as a share of the overload phases' slot time,
// with the probes begun in them: a slot that idles under overload is
// goodput lost (failsafe-go's limit of some 20 never idles one). A probe
// halves the limit, 5 permits to 3, and idles a slot for some 190 ms.
// The probe due 30 to 37.5 s after the first window comes in the 2×
// phase, and finds the samples it needs among the requests that ran
// alone enough in the 0.8× phase before: it must not halve the limit.
// For figures, run it many times:
//
//	go test -run TestProbeCost -count 20 -v ./throttle/overload
func TestProbeCost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const slots, phase = 4, 30 * time.Second
		var probes, good [2]int
		var idleProbe, idleElse, total [2]time.Duration
		svc := newService(slots, 50*time.Millisecond)
		l := newLimiter(t, overload.Config{})
		s := newSim(l, svc)
		var cur atomic.Int32 // the overload phase running (0: 2×, 1: 5×), or -1
		cur.Store(-1)
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			was := false
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
				p := overload.Probing(l)
				if c := cur.Load(); c >= 0 {
					idle := time.Duration(slots-len(svc.slots)) * time.Millisecond
					total[c] += time.Millisecond
					if !p {
						idleElse[c] += idle
					} else if idleProbe[c] += idle; !was {
						probes[c]++
					}
				}
				was = p
			}
		}()
		for i, ph := range []struct {
			load float64
			d    time.Duration
		}{{0.8, phase}, {2, phase}, {0.8, phase / 2}, {5, phase}, {0.8, phase / 2}} {
			c := int32(-1)
			switch i {
			case 1:
				c = 0
			case 3:
				c = 1
			}
			cur.Store(c)
			s.run(i, ph.load*80, ph.d)
		}
		cur.Store(-1)
		s.end()
		close(stop)
		<-done
		good[0], good[1] = s.stats(1, 550*time.Millisecond).good, s.stats(3, 550*time.Millisecond).good
		for c, name := range []string{"2×", "5×"} {
			slotTime := float64(slots * total[c])
			t.Logf("%s: %d probes; slots idle %.3f%% of the time in probes, %.3f%% elsewhere; %d good answers",
				name, probes[c], 100*float64(idleProbe[c])/slotTime, 100*float64(idleElse[c])/slotTime, good[c])
		}
		if probes[0] != 0 {
			t.Errorf("2×: %d probes halved the limit, want none: the 0.8× phase before had the samples", probes[0])
		}
	})
}
