package otelthrottle

import (
	"cmp"
	"context"
	"errors"
	"math"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/go-throttle/throttle/internal/obskit"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
)

// The attribute keys the Observer sets, on metrics and span events.
const (
	policyKey     = attribute.Key("throttle.policy")
	modeKey       = attribute.Key("throttle.mode")
	outcomeKey    = attribute.Key("throttle.outcome")
	operationKey  = attribute.Key("throttle.store.operation")
	reasonKey     = attribute.Key("throttle.release.reason")
	leaseEventKey = attribute.Key("throttle.lease.event")
	errorTypeKey  = attribute.Key("error.type")
	durationKey   = attribute.Key("throttle.store.duration")
	retryAfterKey = attribute.Key("throttle.retry_after")
	errorKey      = attribute.Key("error")
)

// Observer is a throttle.Observer recording the events of every limiter
// whose Options name it in OpenTelemetry instruments and the request's span.
// Make one with New and share it. It is safe for concurrent use.
type Observer struct {
	requests, lease, nearHits metric.Int64Counter
	storeTime, holdTime       metric.Float64Histogram
	queueTime                 metric.Float64Histogram
	sets                      sync.Map // limiterID to *limiterSets
	near                      storekit.NearCounters
	overloads                 obskit.Overloads
}

// NearCache is a store with a near cache of refusals: *redisstore.Store,
// which rueidisstore.New returns too.
type NearCache interface {
	NearCacheStats() storekit.NearStats
}

// NearCaches makes each collection read the near caches of stores,
// counted together in throttle.near_cache.invalidations (their hits are
// counted by policy from the limiters' events), and returns o.
func (o *Observer) NearCaches(stores ...NearCache) *Observer {
	for _, st := range stores {
		o.near.Add(st)
	}
	return o
}

// invalidations reports the entries the near caches given dropped.
func (o *Observer) invalidations(_ context.Context, obs metric.Int64Observer) error {
	if n, ok := o.near.Invalidations(); ok {
		obs.Observe(int64(min(n, math.MaxInt64)))
	}
	return nil
}

// New returns an Observer whose instruments mp creates, nil meaning the
// global otel.GetMeterProvider(). It fails only when mp refuses an
// instrument.
func New(mp metric.MeterProvider) (*Observer, error) {
	m := cmp.Or(mp, otel.GetMeterProvider()).Meter("github.com/go-throttle/throttle/throttle/otelthrottle")
	o := &Observer{}
	var errs [8]error
	o.requests, errs[0] = m.Int64Counter("throttle.requests", metric.WithUnit("{request}"),
		metric.WithDescription("Requests decided by a throttle policy, by outcome."))
	o.storeTime, errs[1] = m.Float64Histogram("throttle.store.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of the throttle's store calls."),
		metric.WithExplicitBucketBoundaries(0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
			0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1))
	o.holdTime, errs[2] = m.Float64Histogram("throttle.hold.duration", metric.WithUnit("s"),
		metric.WithDescription("How long a key was held before it was released."),
		metric.WithExplicitBucketBoundaries(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600))
	o.lease, errs[3] = m.Int64Counter("throttle.lease.events", metric.WithUnit("{event}"),
		metric.WithDescription("Lease extensions and losses."))
	o.nearHits, errs[4] = m.Int64Counter("throttle.near_cache.hits", metric.WithUnit("{request}"),
		metric.WithDescription("Refusals that the Redis store's near cache answered without a store call."))
	_, errs[5] = m.Int64ObservableCounter("throttle.near_cache.invalidations", metric.WithUnit("{entry}"),
		metric.WithDescription("Refusals the near caches dropped because Redis reported a change of their key, "+
			"or their tracking connection was lost."),
		metric.WithInt64Callback(o.invalidations))
	o.queueTime, errs[6] = m.Float64Histogram("throttle.overload.queue.duration", metric.WithUnit("s"),
		metric.WithDescription("How long requests an overload limiter admitted waited in its queue."),
		metric.WithExplicitBucketBoundaries(0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
			0.5, 1, 2.5))
	errs[7] = o.newOverloadInstruments(m)
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	return o, nil
}

// Observe records e, implementing throttle.Observer; recording a metric
// allocates nothing once the limiter's attribute sets exist.
func (o *Observer) Observe(ctx context.Context, e throttle.Event) {
	s := o.limiter(e.Policy, e.Mode)
	switch e.Kind {
	case "store_call":
		st, ok := s.store[e.Op]
		if !ok {
			st = s.storeSets(e.Op)
		}
		if e.Err {
			o.storeTime.Record(ctx, e.Latency.Seconds(), st.failed...)
		} else {
			o.storeTime.Record(ctx, e.Latency.Seconds(), st.ok...)
		}
		storeEvent(ctx, s, st.event, e)
	case "released":
		reason := cmp.Or(e.Reason, "unknown")
		opts, ok := s.hold[reason]
		if !ok {
			opts = s.holdOpts(reason)
		}
		o.holdTime.Record(ctx, e.Hold.Seconds(), opts...)
	case "extended", "lost":
		o.lease.Add(ctx, 1, s.counts[e.Kind]...)
	case "near_hit":
		o.nearHits.Add(ctx, 1, s.counts[e.Kind]...)
	default:
		opts, ok := s.counts[e.Kind]
		if !ok {
			return
		}
		o.requests.Add(ctx, 1, opts...)
		if e.Kind == "admitted" && s.queue != nil {
			o.queueTime.Record(ctx, e.Latency.Seconds(), s.queue...)
		}
		if e.Kind == "rejected" || e.Kind == "dry_run_rejected" {
			rejectionEvent(ctx, s, e)
		}
	}
}

// storeEvent adds a store call to the request's span, when it records.
func storeEvent(ctx context.Context, s *limiterSets, name string, e throttle.Event) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
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
func rejectionEvent(ctx context.Context, s *limiterSets, e throttle.Event) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	name := "throttle.rejected"
	if e.Kind == "dry_run_rejected" {
		name = "throttle.dry_run_rejected"
	}
	span.AddEvent(name, trace.WithAttributes(s.policy, s.mode, retryAfterKey.Float64(e.RetryAfter.Seconds())))
}

// limiterID tells apart the limiters an Observer serves: two may share a
// name under different modes.
type limiterID struct {
	policy string
	mode   throttle.Mode
}

// limiterSets holds one limiter's measurement options, each wrapping an
// attribute.Set built at its first event, so that Observe neither sorts
// attributes nor allocates options. It is read-only once built; values
// the core does not send get their options built per event.
type limiterSets struct {
	policy, mode attribute.KeyValue
	counts       map[string][]metric.AddOption    // outcomes and lease events, by kind
	store        map[string]storeSets             // by op
	hold         map[string][]metric.RecordOption // by reason
	queue        []metric.RecordOption            // an overload limiter's queueing delay; nil for other modes
}

// storeSets are a store operation's options, and its span event's name.
type storeSets struct {
	ok, failed []metric.RecordOption
	event      string
}

// limiter returns the sets of the limiter named policy in mode, building
// them at its first event; two goroutines may build them at once, and
// both get the one stored.
func (o *Observer) limiter(policy string, mode throttle.Mode) *limiterSets {
	id := limiterID{policy, mode}
	if s, ok := o.sets.Load(id); ok {
		return s.(*limiterSets)
	}
	s := &limiterSets{policy: policyKey.String(policy), mode: modeKey.String(mode.String()),
		counts: map[string][]metric.AddOption{}, store: map[string]storeSets{}, hold: map[string][]metric.RecordOption{}}
	for _, k := range []string{"admitted", "rejected", "dry_run_rejected", "failed_open", "failed_closed",
		"shed", "full", "fallback", "key_error", "replayed"} {
		s.counts[k] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(s.policy, s.mode, outcomeKey.String(k)))}
	}
	for _, k := range []string{"extended", "lost"} {
		s.counts[k] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(s.policy, leaseEventKey.String(k)))}
	}
	s.counts["near_hit"] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(s.policy, s.mode))}
	for _, op := range []string{"acquire", "release", "extend", "quota", "record", "recorded", "delete"} {
		s.store[op] = s.storeSets(op)
	}
	for _, r := range []string{"done", "failed", "panic", "dropped", "unknown"} {
		s.hold[r] = s.holdOpts(r)
	}
	if mode == throttle.ModeOverload {
		s.queue = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(s.policy))}
	}
	actual, _ := o.sets.LoadOrStore(id, s)
	return actual.(*limiterSets)
}

// storeSets returns the options of a store operation: policy and operation,
// and error.type "_OTHER" (the semantic conventions' value for an error of
// unknown class: an Event says only that the call failed) when it failed.
func (s *limiterSets) storeSets(op string) storeSets {
	opt := func(kvs ...attribute.KeyValue) []metric.RecordOption {
		return []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(append(kvs, s.policy, operationKey.String(op))...))}
	}
	return storeSets{ok: opt(), failed: opt(errorTypeKey.String("_OTHER")), event: "throttle.store." + op}
}

// holdOpts returns the options of a release for reason.
func (s *limiterSets) holdOpts(reason string) []metric.RecordOption {
	return []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(s.policy, s.mode, reasonKey.String(reason)))}
}
