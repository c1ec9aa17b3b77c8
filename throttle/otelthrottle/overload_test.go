package otelthrottle_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/go-throttle/throttle/internal/obskit/obskittest"
	"github.com/go-throttle/throttle/throttle/overload"
)

// TestOverload drives a real overload.Limiter, observed by the Observer
// and watched by Overload, through every way it admits and sheds
// (obskittest.Drive): the observable instruments read its state at each
// collection (the limit, in flight, queued, base latency), its sheds by
// reason and its canceled waiters, and the histogram times the queueing
// delay of each admission. The shed counts agree with throttle.requests'
// shed outcome, counted from events.
func TestOverload(t *testing.T) {
	e := newEnv(t)
	want := obskittest.Want
	policy := "throttle.policy=" + want.Name
	obskittest.Drive(t, e.obs, func(l *overload.Limiter) {
		require.Same(t, e.obs, e.obs.Overload(l, nil, l), "Overload returns its Observer")
	}, func(t *testing.T) {
		rm := e.collect(t)
		equal(t, "limit", upDown(t, rm, "throttle.overload.limit"), map[string]int64{policy: int64(want.Limit)})
		equal(t, "in flight", upDown(t, rm, "throttle.overload.in_flight"), map[string]int64{policy: int64(want.InFlight)})
		equal(t, "queued", upDown(t, rm, "throttle.overload.queued"), map[string]int64{policy: int64(want.Queued)})
		equal(t, "base latency", gauge(t, rm, "throttle.overload.base_latency"), map[string]float64{policy: want.BaseLatency.Seconds()})
	})

	rm := e.collect(t)
	equal(t, "in flight", upDown(t, rm, "throttle.overload.in_flight"), map[string]int64{policy: 0})
	equal(t, "queued", upDown(t, rm, "throttle.overload.queued"), map[string]int64{policy: 0})
	shed, total := map[string]int64{}, int64(0)
	for r, n := range want.Shed {
		shed["throttle.overload.reason="+string(r)+","+policy] = int64(n)
		total += int64(n)
	}
	equal(t, "shed", counts(t, rm, "throttle.overload.shed"), shed)
	equal(t, "canceled", counts(t, rm, "throttle.overload.canceled"), map[string]int64{policy: int64(want.Canceled)})
	equal(t, "requests", counts(t, rm, "throttle.requests"), map[string]int64{
		outcome(want.Name, "overload", "admitted"): int64(want.Admitted),
		outcome(want.Name, "overload", "shed"):     total,
	})

	dp := histogram(t, rm, "throttle.overload.queue.duration", 0.0001, 2.5)[policy]
	assert.Equal(t, uint64(want.Admitted), dp.Count, "admissions timed")
	assert.InDelta(t, want.Waits.Seconds(), dp.Sum, 1e-9, "the one wait")
	assert.Equal(t, uint64(want.Admitted-want.Waited), dp.BucketCounts[0], "admitted at once")
	longest, _ := dp.Max.Value()
	assert.Equal(t, want.Waits.Seconds(), longest, "the longest wait")
}

// upDown returns an observable up-down counter's values by attribute set.
func upDown(t *testing.T, rm metricdata.ResourceMetrics, name string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	m := find(t, rm, name)
	if m == nil {
		return out
	}
	require.Equal(t, "{request}", m.Unit, "%s: unit", name)
	sum, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok && !sum.IsMonotonic, "%s is %T, want a non-monotonic int64 sum", name, m.Data)
	for _, dp := range sum.DataPoints {
		out[key(dp.Attributes)] = dp.Value
	}
	return out
}

// gauge returns a float64 gauge's values by attribute set.
func gauge(t *testing.T, rm metricdata.ResourceMetrics, name string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	m := find(t, rm, name)
	if m == nil {
		return out
	}
	g, ok := m.Data.(metricdata.Gauge[float64])
	require.True(t, ok, "%s is %T, want a float64 gauge", name, m.Data)
	for _, dp := range g.DataPoints {
		out[key(dp.Attributes)] = dp.Value
	}
	return out
}
