package otelthrottle

import (
	"context"
	"errors"
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/go-throttle/throttle/throttle/overload"
)

// shedReasonKey is the attribute of throttle.overload.shed: why a request
// was shed (overload.Reason).
const shedReasonKey = attribute.Key("throttle.overload.reason")

// Overload makes each collection read the state of lims (nil and repeated
// ones skipped), and returns o: per limiter name, throttle.overload.limit,
// throttle.overload.in_flight, throttle.overload.queued,
// throttle.overload.base_latency, and the counters throttle.overload.shed
// (by reason) and throttle.overload.canceled, all from Limiter.Stats. They
// are observed in a callback at collection time, not recorded per request,
// so that watching a limiter adds nothing to its permit path; limiters
// sharing a name are summed. The queueing delay of admitted requests,
// throttle.overload.queue.duration, is a histogram of the limiter's
// events: give it o as Config.Observer too.
func (o *Observer) Overload(lims ...*overload.Limiter) *Observer {
	o.overloads.Add(lims...)
	return o
}

// overloadInstruments are the instruments read from overload limiters at
// collection time.
type overloadInstruments struct {
	limit, inFlight, queued metric.Int64ObservableUpDownCounter
	base                    metric.Float64ObservableGauge
	shed, canceled          metric.Int64ObservableCounter
}

// newOverloadInstruments makes the instruments of overload limiters on m,
// and registers the callback that observes them.
func (o *Observer) newOverloadInstruments(m metric.Meter) error {
	var (
		in   overloadInstruments
		errs [7]error
	)
	in.limit, errs[0] = m.Int64ObservableUpDownCounter("throttle.overload.limit", metric.WithUnit("{request}"),
		metric.WithDescription("Requests an overload limiter lets be in flight now."))
	in.inFlight, errs[1] = m.Int64ObservableUpDownCounter("throttle.overload.in_flight", metric.WithUnit("{request}"),
		metric.WithDescription("Requests holding a permit of an overload limiter now."))
	in.queued, errs[2] = m.Int64ObservableUpDownCounter("throttle.overload.queued", metric.WithUnit("{request}"),
		metric.WithDescription("Requests waiting in an overload limiter's queue now."))
	in.base, errs[3] = m.Float64ObservableGauge("throttle.overload.base_latency", metric.WithUnit("s"),
		metric.WithDescription("The latency an overload limiter's limit aims near (0 until measured)."))
	in.shed, errs[4] = m.Int64ObservableCounter("throttle.overload.shed", metric.WithUnit("{request}"),
		metric.WithDescription("Requests an overload limiter shed, by reason."))
	in.canceled, errs[5] = m.Int64ObservableCounter("throttle.overload.canceled", metric.WithUnit("{request}"),
		metric.WithDescription("Requests that left an overload limiter's queue because their context ended."))
	if err := errors.Join(errs[:6]...); err != nil {
		return err
	}
	_, errs[6] = m.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		in.observe(o, obs)
		return nil
	}, in.limit, in.inFlight, in.queued, in.base, in.shed, in.canceled)
	return errs[6]
}

// observe observes the state of o's overload limiters, read now.
func (in *overloadInstruments) observe(o *Observer, obs metric.Observer) {
	for _, s := range o.overloads.Stats() {
		policy := policyKey.String(s.Name)
		set := metric.WithAttributeSet(attribute.NewSet(policy))
		obs.ObserveInt64(in.limit, int64(s.Limit), set)
		obs.ObserveInt64(in.inFlight, int64(s.InFlight), set)
		obs.ObserveInt64(in.queued, int64(s.Queued), set)
		obs.ObserveFloat64(in.base, s.BaseLatency.Seconds(), set)
		for _, shed := range s.Shed() {
			obs.ObserveInt64(in.shed, int64(min(shed.N, math.MaxInt64)),
				metric.WithAttributeSet(attribute.NewSet(policy, shedReasonKey.String(string(shed.Reason)))))
		}
		obs.ObserveInt64(in.canceled, int64(min(s.Canceled, math.MaxInt64)), set)
	}
}
