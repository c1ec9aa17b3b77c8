package promthrottle

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/go-throttle/throttle/internal/obskit"
	"github.com/go-throttle/throttle/throttle/overload"
)

// Overload makes each scrape read the state of lims (nil and repeated
// ones skipped), and returns o: per limiter name, the gauges
// throttle_overload_limit, throttle_overload_in_flight,
// throttle_overload_queued and throttle_overload_base_latency_seconds,
// and the counters throttle_overload_shed_total (by reason) and
// throttle_overload_canceled_total, all from Limiter.Stats. They are read
// at scrape time, not counted per request, so that watching a limiter adds
// nothing to its permit path; limiters sharing a name are summed. The
// queueing delay of admitted requests, throttle_overload_queue_duration_seconds,
// is a histogram of the limiter's events: give it o as Config.Observer too.
func (o *Observer) Overload(lims ...*overload.Limiter) *Observer {
	o.overloads.Add(lims...)
	return o
}

// overloadDescs are the descriptors of the series read from overload
// limiters at scrape time.
type overloadDescs struct {
	limit, inFlight, queued, base, shed, canceled *prometheus.Desc
}

func newOverloadDescs() overloadDescs {
	policy := []string{"policy"}
	return overloadDescs{
		limit: prometheus.NewDesc("throttle_overload_limit",
			"Requests an overload limiter lets be in flight now (its adaptive limit; half of it while a probe measures the base latency).",
			policy, nil),
		inFlight: prometheus.NewDesc("throttle_overload_in_flight",
			"Requests holding a permit of an overload limiter now, NeverShed ones included.", policy, nil),
		queued: prometheus.NewDesc("throttle_overload_queued",
			"Requests waiting in an overload limiter's queue now.", policy, nil),
		base: prometheus.NewDesc("throttle_overload_base_latency_seconds",
			"The latency an overload limiter's limit aims near: the median of requests that did not wait for each other (0 until measured).",
			policy, nil),
		shed: prometheus.NewDesc("throttle_overload_shed_total",
			"Requests an overload limiter shed, by reason: limit (ShedFirst with no permit free), queue-timeout or queue-full.",
			[]string{"policy", "reason"}, nil),
		canceled: prometheus.NewDesc("throttle_overload_canceled_total",
			"Requests that left an overload limiter's queue because their context ended (the client gave up) before a permit was free.",
			policy, nil),
	}
}

func (d *overloadDescs) describe(ch chan<- *prometheus.Desc) {
	for _, desc := range []*prometheus.Desc{d.limit, d.inFlight, d.queued, d.base, d.shed, d.canceled} {
		ch <- desc
	}
}

// collect sends the state of the limiters of o, read now.
func (d *overloadDescs) collect(o *obskit.Overloads, ch chan<- prometheus.Metric) {
	for _, s := range o.Stats() {
		gauge := func(desc *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, s.Name)
		}
		gauge(d.limit, float64(s.Limit))
		gauge(d.inFlight, float64(s.InFlight))
		gauge(d.queued, float64(s.Queued))
		gauge(d.base, s.BaseLatency.Seconds())
		for _, shed := range s.Shed() {
			ch <- prometheus.MustNewConstMetric(d.shed, prometheus.CounterValue, float64(shed.N), s.Name, string(shed.Reason))
		}
		ch <- prometheus.MustNewConstMetric(d.canceled, prometheus.CounterValue, float64(s.Canceled), s.Name)
	}
}
