package overload

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// The rule of the limit, in figures. Every one is relative to the base
// latency or to the demand, so that no service has to tune them.
const (
	// tolerance is how much slower than the base latency a request may
	// run before the limit falls: the target is base × (1 + tolerance).
	// Envoy's adaptive concurrency filter uses the same 25% buffer.
	tolerance = 0.25
	// minGradient bounds one window's fall, so that one slow window (a GC
	// pause, a noisy neighbour) at most halves the limit.
	minGradient = 0.5
	// windowMin is how many latencies a window needs before it is judged;
	// the latest windowSamples of them are kept and their median taken.
	windowMin     = 8
	windowSamples = 16
	// minWindow is the shortest window: two base latencies, at least this.
	minWindow = 20 * time.Millisecond
	// headroom is how far above the most requests seen in flight at once
	// the limit may rise while latency stays flat (a multiple): enough
	// for a burst to pass, not so much that the next overload starts far
	// above what the service can take.
	headroom = 2
	// idleLimit is the least the limit may rise to while latency stays
	// flat, however few requests run: a quiet service still takes a
	// burst of this many at once without queueing.
	idleLimit = 8
	// busyWindows is over how many windows the requests that keep the
	// service busy are averaged (an exponential moving average).
	busyWindows = 4
	// calmWindows is how many windows in a row must end under the target
	// before the limit may double in a window again (TCP's slow start):
	// a service that took more load than before at the same latency
	// grows fast, one that was just overloaded grows by the gradient.
	calmWindows = 50
	// decay is the factor by which a window of flat latency brings a
	// limit above the demand's ceiling down towards it.
	decay = 0.9
	// probeEvery is how often the base latency is measured again (plus up
	// to a quarter more, so that the processes of a fleet do not probe in
	// step); probeSamples and minProbe say how long a probe lasts.
	probeEvery   = 30 * time.Second
	probeSamples = 8
	minProbe     = 100 * time.Millisecond
	// staleGradient: staleWindows in a row this far over the target with
	// the limit on its throughput floor mean that the base latency may be
	// stale (the service got slower for good): measure it again now, if
	// the last probe ended staleGap ago.
	staleGradient = 0.75
	staleWindows  = 3
	staleGap      = 5 * time.Second
)

// adaptive is the limit of requests in flight and what it learns from
// their latencies: the gradient of Envoy's adaptive concurrency filter and
// Netflix's Gradient limits, limit × target / latency per window, with a
// floor of completed requests per second × base latency (the
// bandwidth-delay product, as TCP BBR keeps its window) × (1 +
// tolerance), so that no window takes the limit below what keeps the
// service busy. Times are nanoseconds on the limiter's clock. It is
// guarded by Limiter.mu.
type adaptive struct {
	limit, min, max float64
	// base is the median latency of requests that did not wait for each
	// other: measured by each probe, lowered by any window faster than it
	// (0 until the first window).
	base int64

	// The window being measured: requests that ended since start.
	start int64
	n     int // latencies in the window
	last  [windowSamples]int64
	peak  int // the most requests in flight when one of them was granted
	stale int // windows in a row well over the target with the limit on its floor
	// busy is how many requests keep the service busy: requests completed
	// per second × base latency, averaged over the last windows.
	busy float64
	calm int // windows in a row under the target

	// A probe of the base latency: while probing, the limit is halved so
	// that requests stop waiting for each other (the equilibrium under
	// overload is 1.25 × what keeps the service busy), and the latencies
	// of the requests granted since probeFrom are the base.
	probing   bool
	probeFrom int64
	probeN    int
	probe     [probeSamples]int64
	nextProbe int64
	probed    int64 // when the last probe ended
	// free holds the latest latencies, since the last probe, of requests
	// that ran outside a probe as a probe runs them: with no more in
	// flight, when granted and when they ended, than a probe allows. A
	// probe that comes due with probeSamples of them takes the base from
	// them and does not halve the limit, which under overload idles a
	// slot of the service (of 4, for some 190 ms). freeMax is the most in
	// flight with any of them: a window over the target at no more is
	// slower than they were, and they are out of date.
	freeN, freeMax int
	free           [probeSamples]int64
}

// newAdaptive returns a limit between lo and hi, starting at idleLimit.
func newAdaptive(lo, hi int) adaptive {
	l := float64(min(max(lo, idleLimit), hi))
	return adaptive{limit: l, min: float64(lo), max: float64(hi), calm: calmWindows}
}

// permits returns how many requests may be in flight now.
func (a *adaptive) permits() int {
	if a.probing {
		return a.probeLimit()
	}
	return int(math.Round(a.limit))
}

// probeLimit returns how many requests may be in flight during a probe.
func (a *adaptive) probeLimit() int {
	return int(max(a.min, math.Ceil(a.limit/2)))
}

// sample learns from a request granted at start, with with requests in
// flight (itself included), that ended at now with end in flight.
func (a *adaptive) sample(now, start int64, with, end int) {
	rtt := max(now-start, int64(time.Microsecond))
	if a.probing {
		a.sampleProbe(now, start, rtt)
		return
	}
	if k := max(with, end); k <= a.probeLimit() {
		a.free[a.freeN%probeSamples] = rtt
		a.freeN++
		a.freeMax = max(a.freeMax, k)
	}
	a.last[a.n%windowSamples] = rtt
	a.n++
	a.peak = max(a.peak, with)
	if a.n < windowMin || now-a.start < max(2*a.base, int64(minWindow)) {
		return
	}
	a.judge(now)
	a.reset(now)
	if a.base > 0 && now >= a.nextProbe {
		if a.freeN >= probeSamples { // a probe's samples, already taken
			a.base = median(a.free[:])
			a.probed, a.stale, a.freeN, a.freeMax = now, 0, 0, 0
			a.scheduleProbe(now)
			return
		}
		a.probing, a.probeFrom, a.probeN = true, now, 0
	}
}

// judge moves the limit by the window that ends at now.
func (a *adaptive) judge(now int64) {
	med := median(a.last[:min(a.n, windowSamples)])
	if a.base == 0 || med < a.base {
		a.base = med
		if a.nextProbe == 0 {
			a.scheduleProbe(now)
		}
	}
	g := float64(a.base) * (1 + tolerance) / float64(med)
	busy := float64(a.n) * float64(a.base) / float64(now-a.start)
	if a.busy == 0 {
		a.busy = busy
	}
	a.busy += (busy - a.busy) / busyWindows
	if g < 1 {
		// Over the target: fall by the gradient, but not below the
		// requests that keep the service busy with the target's room
		// to spare, where latency meets the target if the base is right.
		floor, fall := a.busy*(1+tolerance), a.limit*max(g, minGradient)
		a.calm = 0
		a.limit = min(a.limit, max(fall, floor, a.min))
		if fall > max(floor, a.min) || g >= staleGradient {
			a.stale = 0
		} else if a.stale++; a.stale >= staleWindows && now-a.probed >= int64(staleGap) {
			a.nextProbe, a.freeN, a.freeMax = now, 0, 0 // samples from before the change would not do
		}
		if a.peak <= a.freeMax { // the service got slower than the free samples say
			a.freeN, a.freeMax = 0, 0
		}
		return
	}
	// Flat latency: rise by the gradient towards the ceiling set by the
	// most requests in flight with which latency was seen flat, or come
	// down towards it when demand fell.
	a.stale = 0
	a.calm++
	if a.calm >= calmWindows {
		g = 2
	}
	ceiling := max(float64(headroom*a.peak), idleLimit, a.min)
	if a.limit < ceiling {
		a.limit = min(a.limit*g, ceiling)
	} else {
		a.limit = max(ceiling, a.limit*decay)
	}
	a.limit = min(a.limit, a.max)
}

// sampleProbe learns the base latency from the requests granted since the
// probe began, and ends the probe when it has enough of them or has run
// long enough.
func (a *adaptive) sampleProbe(now, start, rtt int64) {
	if start >= a.probeFrom {
		a.probe[a.probeN%probeSamples] = rtt
		a.probeN++
	}
	if a.probeN < probeSamples && now-a.probeFrom < max(8*a.base, int64(minProbe)) {
		return
	}
	if a.probeN > 0 {
		a.base = median(a.probe[:min(a.probeN, probeSamples)])
	}
	a.probing, a.probed, a.stale, a.freeN, a.freeMax = false, now, 0, 0, 0
	a.scheduleProbe(now)
	a.reset(now)
}

// scheduleProbe sets the next probe a period and some jitter after now.
func (a *adaptive) scheduleProbe(now int64) {
	a.nextProbe = now + int64(probeEvery) + rand.Int64N(int64(probeEvery/4)) //nolint:gosec // jitter
}

// reset starts a new window at now.
func (a *adaptive) reset(now int64) {
	a.start, a.n, a.peak = now, 0, 0
}

// median returns the median of s, which it sorts.
func median(s []int64) int64 {
	slices.Sort(s)
	return s[len(s)/2]
}
