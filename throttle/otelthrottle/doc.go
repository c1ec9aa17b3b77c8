// Package otelthrottle measures throttle's limiters with OpenTelemetry,
// the twin of package promthrottle: an Observer records every decision,
// store call, release and lease event in metric instruments, and adds
// store calls and rejections to the request's span as span events.
//
//	obs, err := otelthrottle.New(mp)
//	if err != nil {
//		return err
//	}
//	lock, err := throttle.NewLock(store, throttle.LockConfig{Name: "submit",
//		Options: throttle.Options{Observer: obs}})
//
// Spans need no setup: the Observer writes on the span of the request's
// context (trace.SpanFromContext), which tracing middleware such as
// otelhttp put there, and only while that span records.
//
// # Instruments
//
//	name                     kind       unit       attributes
//	throttle.requests        counter    {request}  throttle.policy, throttle.mode, throttle.outcome
//	throttle.store.duration  histogram  s          throttle.policy, throttle.store.operation, error.type
//	throttle.hold.duration   histogram  s          throttle.policy, throttle.mode, throttle.release.reason
//	throttle.lease.events    counter    {event}    throttle.policy, throttle.lease.event
//
// The values are promthrottle's labels: throttle.outcome is admitted,
// rejected, dry_run_rejected, failed_open, failed_closed, shed, fallback,
// key_error or replayed; throttle.store.operation is acquire, release,
// extend, quota, record or recorded, with error.type "_OTHER" only on the
// calls that failed; throttle.release.reason is done, failed or panic;
// throttle.lease.event is extended or lost. The store duration's buckets
// resolve 50µs to 1s, the hold duration's 1ms to an hour.
//
// The span events are throttle.store.<operation>, with throttle.policy,
// throttle.store.operation, throttle.store.duration (seconds) and
// error=true when the call failed; and throttle.rejected or
// throttle.dry_run_rejected, with throttle.policy, throttle.mode and
// throttle.retry_after (seconds).
//
// Every attribute value is a policy name or a fixed word, and an Event
// carries no key, user, token or client address: the series are a small
// multiple of the policies, however many users there are, and no personal
// data reaches the monitoring system. Give policies fixed names, never
// ones built from a request.
package otelthrottle
