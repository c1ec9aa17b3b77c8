package promthrottle_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/obskit/obskittest"
	"github.com/go-throttle/throttle/throttle/overload"
	"github.com/go-throttle/throttle/throttle/promthrottle"
)

// TestOverload drives a real overload.Limiter, observed by the Observer
// and watched by Overload, through every way it admits and sheds
// (obskittest.Drive): the gauges read its state at each scrape (the limit,
// in flight, queued, base latency), the counters its sheds by reason and
// its canceled waiters, and the histogram the queueing delay of each
// admission. The shed counters agree with throttle_requests_total's shed
// outcome, counted from events.
func TestOverload(t *testing.T) {
	want := obskittest.Want
	obs := promthrottle.New()
	reg := newRegistry(t, obs)
	policy := "policy=" + want.Name
	obskittest.Drive(t, obs, func(l *overload.Limiter) {
		require.Same(t, obs, obs.Overload(l, nil, l), "Overload returns its Observer")
		fs := gather(t, reg)
		checkSeries(t, fs, "throttle_overload_limit", map[string]float64{policy: float64(want.Limit)})
		checkSeries(t, fs, "throttle_overload_shed_total", map[string]float64{
			shedLabels(want.Name, overload.ReasonLimit): 0, shedLabels(want.Name, overload.ReasonQueueTimeout): 0,
			shedLabels(want.Name, overload.ReasonQueueFull): 0,
		})
	}, func(t *testing.T) {
		fs := gather(t, reg)
		checkSeries(t, fs, "throttle_overload_limit", map[string]float64{policy: float64(want.Limit)})
		checkSeries(t, fs, "throttle_overload_in_flight", map[string]float64{policy: float64(want.InFlight)})
		checkSeries(t, fs, "throttle_overload_queued", map[string]float64{policy: float64(want.Queued)})
		checkSeries(t, fs, "throttle_overload_base_latency_seconds", map[string]float64{policy: want.BaseLatency.Seconds()})
	})

	fs := gather(t, reg)
	checkSeries(t, fs, "throttle_overload_in_flight", map[string]float64{policy: 0})
	checkSeries(t, fs, "throttle_overload_queued", map[string]float64{policy: 0})
	shed, total := map[string]float64{}, 0.0
	for r, n := range want.Shed {
		shed[shedLabels(want.Name, r)] = float64(n)
		total += float64(n)
	}
	checkSeries(t, fs, "throttle_overload_shed_total", shed)
	checkSeries(t, fs, "throttle_overload_canceled_total", map[string]float64{policy: float64(want.Canceled)})
	checkSeries(t, fs, "throttle_requests_total", map[string]float64{
		req(want.Name, "overload", "admitted"): float64(want.Admitted),
		req(want.Name, "overload", "shed"):     total,
	})

	h := histogram(t, fs, "throttle_overload_queue_duration_seconds", policy)
	assert.Equal(t, uint64(want.Admitted), h.GetSampleCount(), "admissions timed")
	assert.InDelta(t, want.Waits.Seconds(), h.GetSampleSum(), 1e-9, "the one wait")
	for _, b := range h.GetBucket() {
		n := want.Admitted - want.Waited // admitted at once: 0 s
		if b.GetUpperBound() >= want.Waits.Seconds() {
			n = want.Admitted
		}
		assert.Equal(t, uint64(n), b.GetCumulativeCount(), "bucket le=%v", b.GetUpperBound())
	}
}

// TestOverloadSharedName: two limiters of one name are one series,
// summed, so that a scrape never fails on a duplicate; a registry with no
// limiter has no overload series.
func TestOverloadSharedName(t *testing.T) {
	obs := promthrottle.New()
	reg := newRegistry(t, obs)
	checkSeries(t, gather(t, reg), "throttle_overload_limit", nil)
	a, err := overload.New(overload.Config{Name: "report", MaxLimit: 3})
	require.NoError(t, err)
	b, err := overload.New(overload.Config{Name: "report", MaxLimit: 5})
	require.NoError(t, err)
	c, err := overload.New(overload.Config{Name: "export", MaxLimit: 7})
	require.NoError(t, err)
	obs.Overload(a, b).Overload(c)
	checkSeries(t, gather(t, reg), "throttle_overload_limit", map[string]float64{"policy=report": 8, "policy=export": 7})
}

// shedLabels returns a labels string for throttle_overload_shed_total.
func shedLabels(policy string, r overload.Reason) string {
	return labels("policy="+policy, "reason="+string(r))
}
