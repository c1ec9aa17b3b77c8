package otelthrottle

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/go-throttle/throttle/throttle"
)

// scopeName is the instrumentation scope of the Observer's meter: the
// package's import path, as OpenTelemetry asks, so that a view or an
// exporter can pick out (or drop) the throttle's instruments.
const scopeName = "github.com/go-throttle/throttle/throttle/otelthrottle"

// Names of the instruments. The package documentation lists them with
// their units and attributes, for views and dashboards.
const (
	// requestsName counts requests by outcome.
	requestsName = "throttle.requests"
	// storeDurationName times store calls, in seconds.
	storeDurationName = "throttle.store.duration"
	// holdDurationName times how long a key was held before its release,
	// in seconds.
	holdDurationName = "throttle.hold.duration"
	// leaseEventsName counts lease extensions and losses.
	leaseEventsName = "throttle.lease.events"
)

// Attribute keys the Observer sets. Their values are policy names and
// fixed words only (see the package documentation), so each instrument has
// a small, bounded set of series.
const (
	// policyKey is the policy's name: the Name of the limiter's config
	// (throttle.LockConfig, QuotaConfig or ReplayConfig).
	policyKey = attribute.Key("throttle.policy")
	// modeKey is the policy's mode: dedupe, cooldown or exclusive (a Lock),
	// quota (a Quota) or replay (a Replay).
	modeKey = attribute.Key("throttle.mode")
	// outcomeKey is what became of a request: admitted, rejected,
	// dry_run_rejected, failed_open, failed_closed, fallback or key_error.
	outcomeKey = attribute.Key("throttle.outcome")
	// operationKey is the store call: acquire, release, extend or quota.
	operationKey = attribute.Key("throttle.store.operation")
	// reasonKey is why a key was released: done, failed or panic.
	reasonKey = attribute.Key("throttle.release.reason")
	// leaseEventKey is what happened to a lease: extended or lost.
	leaseEventKey = attribute.Key("throttle.lease.event")
	// errorTypeKey is the semantic conventions' error.type, set on a store
	// call that failed. The Event says only that it failed, not how, so
	// its value is always errorTypeOther.
	errorTypeKey = attribute.Key("error.type")
	// durationKey is a span event's store call duration, in seconds.
	durationKey = attribute.Key("throttle.store.duration")
	// retryAfterKey is a span event's wait, in seconds, that a rejected
	// request's client was told.
	retryAfterKey = attribute.Key("throttle.retry_after")
	// errorKey is true on the span event of a store call that failed.
	errorKey = attribute.Key("error")
)

// errorTypeOther is the error.type of a failed store call: the semantic
// conventions' value for an error whose class is not known.
const errorTypeOther = "_OTHER"

// Bucket boundaries, in seconds. Store calls take from tens of microseconds
// (memstore) to the Options.Timeout (100 ms by default); holds last from a
// failed request's milliseconds to an Exclusive job's minutes. The SDK's
// default boundaries (0 to 10000) suit milliseconds, not seconds, so both
// histograms carry their own.
var (
	storeBuckets = []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
		0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}
	holdBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600}
)

// Observer is a throttle.Observer that records a limiter's events in
// OpenTelemetry instruments and, when a request's span is recording, adds
// its store calls and rejections to the span as events. Make one with New
// and share it between every limiter: their names tell their series apart.
// It is safe for concurrent use.
type Observer struct {
	requests  metric.Int64Counter
	storeTime metric.Float64Histogram
	holdTime  metric.Float64Histogram
	lease     metric.Int64Counter
	spans     bool

	// sets maps a limiterID to its *limiterSets, built on first sight.
	sets sync.Map
}

// Option configures New.
type Option func(*config)

type config struct {
	provider metric.MeterProvider
	spans    bool
}

// WithMeterProvider makes the Observer create its instruments with mp
// instead of otel.GetMeterProvider(), the global provider of the moment New
// is called; nil keeps the global one. Tests and programs that pass their
// providers around rather than setting the global one use it.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) {
		if mp != nil {
			c.provider = mp
		}
	}
}

// WithSpanEvents turns the span events on (the default) or off. With them
// on, each store call and each rejection of a request whose context carries
// a recording span is added to that span; with them off, the Observer only
// records metrics, for traces that should stay lean.
func WithSpanEvents(on bool) Option {
	return func(c *config) { c.spans = on }
}

// New returns an Observer whose instruments come from the global meter
// provider, or the one WithMeterProvider gives. Set it as the
// throttle.Options.Observer of every limiter to measure. It fails only when
// the provider refuses an instrument.
func New(opts ...Option) (*Observer, error) {
	cfg := config{spans: true}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.provider == nil {
		cfg.provider = otel.GetMeterProvider()
	}
	m := cfg.provider.Meter(scopeName)
	o := &Observer{spans: cfg.spans}
	var err error
	if o.requests, err = m.Int64Counter(requestsName, metric.WithUnit("{request}"),
		metric.WithDescription("Requests decided by a throttle policy, by outcome.")); err != nil {
		return nil, err
	}
	if o.storeTime, err = m.Float64Histogram(storeDurationName, metric.WithUnit("s"),
		metric.WithDescription("Duration of the throttle's store calls."),
		metric.WithExplicitBucketBoundaries(storeBuckets...)); err != nil {
		return nil, err
	}
	if o.holdTime, err = m.Float64Histogram(holdDurationName, metric.WithUnit("s"),
		metric.WithDescription("How long a key was held before it was released."),
		metric.WithExplicitBucketBoundaries(holdBuckets...)); err != nil {
		return nil, err
	}
	if o.lease, err = m.Int64Counter(leaseEventsName, metric.WithUnit("{event}"),
		metric.WithDescription("Lease extensions and losses.")); err != nil {
		return nil, err
	}
	return o, nil
}

// Observe records e. It implements throttle.Observer: the limiter calls it
// on the request's goroutine with the request's context. Once a policy's
// attribute sets are built (on its first event), recording a metric
// allocates nothing of its own; span events cost a few allocations, and
// only while the span records.
func (o *Observer) Observe(ctx context.Context, e throttle.Event) {
	s := o.limiter(e.Policy, e.Mode)
	switch e.Kind {
	case throttle.Admitted, throttle.Rejected, throttle.DryRunRejected, throttle.FailedOpen,
		throttle.FailedClosed, throttle.Fallback, throttle.KeyError, throttle.Replayed, throttle.Shed:
		o.requests.Add(ctx, 1, s.outcome[e.Kind]...)
		if o.spans && (e.Kind == throttle.Rejected || e.Kind == throttle.DryRunRejected) {
			o.rejectionEvent(ctx, s, e)
		}
	case throttle.StoreCall:
		op := opIndex(e.Op)
		failed := 0
		if e.Err {
			failed = 1
		}
		if op < 0 {
			o.storeTime.Record(ctx, e.Latency.Seconds(), s.storeOpts(e.Op, e.Err)...)
		} else {
			o.storeTime.Record(ctx, e.Latency.Seconds(), s.store[op][failed]...)
		}
		if o.spans {
			o.storeEvent(ctx, s, e, op)
		}
	case throttle.Released:
		if int(e.Reason) < len(s.hold) {
			o.holdTime.Record(ctx, e.Hold.Seconds(), s.hold[e.Reason]...)
		} else {
			o.holdTime.Record(ctx, e.Hold.Seconds(), s.holdOpts(e.Reason)...)
		}
	case throttle.Extended:
		o.lease.Add(ctx, 1, s.extended...)
	case throttle.Lost:
		o.lease.Add(ctx, 1, s.lost...)
	}
	// FallbackOn and FallbackOff have no instrument: the fallback outcome
	// counts the requests the fallback decides.
}

// storeEvent adds a store call to the request's span, when it records.
func (o *Observer) storeEvent(ctx context.Context, s *limiterSets, e throttle.Event, op int) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	name := "throttle.store." + e.Op
	if op >= 0 {
		name = storeEventNames[op]
	}
	attrs := make([]attribute.KeyValue, 3, 4)
	attrs[0], attrs[1], attrs[2] = s.policy, operationKey.String(e.Op), durationKey.Float64(e.Latency.Seconds())
	if e.Err {
		attrs = append(attrs, errorKey.Bool(true))
	}
	span.AddEvent(name, trace.WithAttributes(attrs...))
}

// rejectionEvent adds a (dry run's) rejection to the request's span, when
// it records.
func (o *Observer) rejectionEvent(ctx context.Context, s *limiterSets, e throttle.Event) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	name := "throttle.rejected"
	if e.Kind == throttle.DryRunRejected {
		name = "throttle.dry_run_rejected"
	}
	span.AddEvent(name, trace.WithAttributes(s.policy, s.mode, retryAfterKey.Float64(e.RetryAfter.Seconds())))
}

// limiterID tells apart the limiters an Observer serves: policies are told
// apart by name, and a name used with two modes gets two entries.
type limiterID struct {
	policy string
	mode   throttle.Mode
}

// limiterSets holds one limiter's measurement options, each wrapping a
// prebuilt attribute.Set, so that Observe neither sorts attributes nor
// allocates option slices. Indices are EventKind, ReleaseReason and
// opIndex; a nil slice is a kind that is no outcome.
type limiterSets struct {
	policy   attribute.KeyValue
	mode     attribute.KeyValue
	outcome  [throttle.Shed + 1][]metric.AddOption
	store    [len(ops)][2][]metric.RecordOption
	hold     [throttle.ReleasePanic + 1][]metric.RecordOption
	extended []metric.AddOption
	lost     []metric.AddOption
}

// outcomes are the EventKinds counted by throttle.requests.
var outcomes = [...]throttle.EventKind{throttle.Admitted, throttle.Rejected, throttle.DryRunRejected,
	throttle.FailedOpen, throttle.FailedClosed, throttle.Fallback, throttle.KeyError, throttle.Replayed, throttle.Shed}

// ops are the store operations an Event names, in opIndex order.
var ops = [...]string{"acquire", "release", "extend", "quota", "record", "recorded"}

// storeEventNames are the span event names of ops.
var storeEventNames = [len(ops)]string{"throttle.store.acquire", "throttle.store.release",
	"throttle.store.extend", "throttle.store.quota", "throttle.store.record", "throttle.store.recorded"}

// opIndex returns op's index in ops, or -1 for an operation it does not
// know (which the core does not send, but which is still recorded).
func opIndex(op string) int {
	switch op {
	case "acquire":
		return 0
	case "release":
		return 1
	case "extend":
		return 2
	case "quota":
		return 3
	case "record":
		return 4
	case "recorded":
		return 5
	}
	return -1
}

// limiter returns the sets of the limiter named policy in mode, building
// them on its first event. Two goroutines may build them at once; one
// result wins and both are the same.
func (o *Observer) limiter(policy string, mode throttle.Mode) *limiterSets {
	id := limiterID{policy: policy, mode: mode}
	if s, ok := o.sets.Load(id); ok {
		return s.(*limiterSets)
	}
	s, _ := o.sets.LoadOrStore(id, newLimiterSets(policy, mode))
	return s.(*limiterSets)
}

func newLimiterSets(policy string, mode throttle.Mode) *limiterSets {
	s := &limiterSets{policy: policyKey.String(policy), mode: modeKey.String(mode.String())}
	for _, k := range outcomes {
		s.outcome[k] = []metric.AddOption{metric.WithAttributeSet(
			attribute.NewSet(s.policy, s.mode, outcomeKey.String(k.String())))}
	}
	for i, op := range ops {
		for failed := range 2 {
			s.store[i][failed] = s.storeOpts(op, failed == 1)
		}
	}
	for r := range s.hold {
		s.hold[r] = s.holdOpts(throttle.ReleaseReason(r))
	}
	s.extended = []metric.AddOption{metric.WithAttributeSet(
		attribute.NewSet(s.policy, leaseEventKey.String("extended")))}
	s.lost = []metric.AddOption{metric.WithAttributeSet(
		attribute.NewSet(s.policy, leaseEventKey.String("lost")))}
	return s
}

// storeOpts returns the options of a store call: policy, operation and,
// when it failed, error.type.
func (s *limiterSets) storeOpts(op string, failed bool) []metric.RecordOption {
	set := attribute.NewSet(s.policy, operationKey.String(op))
	if failed {
		set = attribute.NewSet(s.policy, operationKey.String(op), errorTypeKey.String(errorTypeOther))
	}
	return []metric.RecordOption{metric.WithAttributeSet(set)}
}

// holdOpts returns the options of a release for reason r.
func (s *limiterSets) holdOpts(r throttle.ReleaseReason) []metric.RecordOption {
	return []metric.RecordOption{metric.WithAttributeSet(
		attribute.NewSet(s.policy, s.mode, reasonKey.String(r.String())))}
}

// Check at compile time that Observer is a throttle.Observer.
var _ throttle.Observer = (*Observer)(nil)
