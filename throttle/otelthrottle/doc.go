// Package otelthrottle measures throttle's limiters (Lock, Quota and
// Replay) with OpenTelemetry: an Observer records every decision, store
// call, release and lease event of the limiters it is given to in metric
// instruments, and adds store calls
// and rejections to the request's span as span events. It is the
// OpenTelemetry twin of package promthrottle and reports the same things;
// import only the one you use.
//
// # Usage
//
// Set up a MeterProvider with your exporter (or rely on the global one that
// otel.SetMeterProvider installed), make one Observer, and give it to every
// limiter in its Options:
//
//	obs, err := otelthrottle.New(otelthrottle.WithMeterProvider(mp))
//	if err != nil {
//		return err
//	}
//	lock, err := throttle.NewLock(store, throttle.LockConfig{Name: "submit",
//		Options: throttle.Options{Observer: obs}})
//
// Without WithMeterProvider the Observer uses otel.GetMeterProvider() as it
// is when New is called; the global provider forwards to the one set later,
// so New may run before otel.SetMeterProvider. Spans need no setup: the
// Observer writes on the span the request's context carries
// (trace.SpanFromContext), which your tracing middleware (otelhttp, say)
// put there, and does nothing when that span is not recording.
// WithSpanEvents(false) keeps traces free of the throttle's events.
//
// # Instruments
//
//	name                     kind       unit       attributes
//	throttle.requests        counter    {request}  throttle.policy, throttle.mode, throttle.outcome
//	throttle.store.duration  histogram  s          throttle.policy, throttle.store.operation, error.type
//	throttle.hold.duration   histogram  s          throttle.policy, throttle.mode, throttle.release.reason
//	throttle.lease.events    counter    {event}    throttle.policy, throttle.lease.event
//
// throttle.outcome is admitted, rejected, dry_run_rejected (Options.DryRun
// let through a request it would have turned away), failed_open,
// failed_closed, fallback (FailOver's fallback store admitted it),
// key_error (the key or cost could not be built) or replayed (a Replay
// duplicate got the first response). throttle.store.operation is acquire,
// release, extend, quota, record or recorded; error.type is set, to "_OTHER",
// only on calls that failed, so the failed calls are the histogram's count
// for the series with error.type. The store duration's buckets resolve
// 50 µs to 1 s; the hold duration's 1 ms to an hour. throttle.release.reason
// is done, failed or panic: a key is released (and its hold timed) when an
// Exclusive request or a Lock.Do job ends, and when a Dedupe request fails or
// panics; Cooldown keys and successful Dedupe keys are never released,
// they expire. throttle.lease.event is extended (by the refresher of an
// Exclusive request or a Lock.Do job) or lost.
//
// The span events are throttle.store.acquire, .release, .extend and .quota,
// with throttle.policy, throttle.store.operation, throttle.store.duration
// (seconds, a float) and error=true when the call failed; and
// throttle.rejected or throttle.dry_run_rejected, with throttle.policy,
// throttle.mode and throttle.retry_after (seconds, a float).
//
// # Bounded attributes
//
// Every attribute value is a policy name or one of the fixed words above.
// A throttle.Event carries no key, user, token or client address, so none
// can reach a metric or a span: the number of series is the number of
// policies times a handful, however many users there are, and no personal
// data ends up in the monitoring system. (A series per user would also
// make the metrics backend the first thing an attacker with many
// addresses takes down.) Give policies fixed names, never ones built from
// a request.
//
// # Cost
//
// Observe looks the policy up in a sync.Map and, on the policy's first
// event, builds every attribute set it will need. After that, recording a
// metric makes no allocation of its own (the SDK may make some); a span
// event costs a few, and only while the request's span records. A limiter
// without an Observer pays nothing at all.
package otelthrottle
