// Package promthrottle exports what throttle's limiters decide, and how
// their store behaves, as Prometheus metrics with a Grafana dashboard to
// match. It is a package of its own so that services which do not use
// Prometheus never import its client.
//
// One Observer serves every limiter of the process: set it in their
// Options and register it once. Series carry only policy names and fixed
// words, never a key or client address. See docs/observability.md in the
// repository for the metrics, their labels and alert queries.
package promthrottle
