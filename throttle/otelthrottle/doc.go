// Package otelthrottle is the OpenTelemetry twin of package promthrottle:
// its Observer records every decision, store call, release and lease event
// in metric instruments, and adds store calls and rejections as events to
// the request's span (the one in its context, while it records).
//
// Attributes carry only policy names and fixed words, never a key or
// client address. See docs/observability.md in the repository for the
// instruments, attributes and span events.
package otelthrottle
