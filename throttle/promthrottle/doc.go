// Package promthrottle exports what throttle's limiters decide, and how
// their store behaves, as Prometheus metrics, with a Grafana dashboard to
// match. It is a package of its own so that services which do not use
// Prometheus never import its client.
//
// One Observer serves every limiter of the process: it is the
// throttle.Observer to set in their Options and the prometheus.Collector
// to register once.
//
//	obs := promthrottle.New(mem) // mem: the process's memstore, if any
//	prometheus.MustRegister(obs)
//	submit, err := throttle.NewLock(st, throttle.LockConfig{Name: "submit",
//		Options: throttle.Options{Observer: obs}})
//
// # Metrics
//
//	name                             type       labels                 what
//	throttle_requests_total          counter    policy, mode, outcome  requests decided, by outcome
//	throttle_store_duration_seconds  histogram  policy, op             store calls' latency, 50µs to 1s, failed ones included
//	throttle_store_errors_total      counter    policy, op             store calls that failed or timed out
//	throttle_hold_duration_seconds   histogram  policy, mode, reason   how long released keys were held, 1ms to 5min
//	throttle_lease_events_total      counter    policy, event          lease extensions and losses, FailOver switches
//	throttle_memstore_keys           gauge      (none)                 keys in the stores given to New, at scrape time
//
// mode is dedupe, cooldown or exclusive for a Lock, quota for a Quota,
// replay for a Replay. outcome is the Kind of the request's throttle.Event:
// admitted, rejected, dry_run_rejected, failed_open, failed_closed, shed,
// fallback, key_error or replayed; a request whose client left before the
// store answered has none. Under Options.DryRun, failed_closed and
// key_error, like dry_run_rejected, count requests that went ahead. op is acquire, release or extend (locks), quota
// (a Quota's decision or refund: one GCRA script, whose latency is its
// own), record or recorded (Replay). reason is done, failed or panic: keys
// are released when an Exclusive request or a Lock.Do job ends, and when a
// Dedupe request fails or panics; Cooldown keys and kept Dedupe keys
// expire unobserved. event is extended or lost (Exclusive and Do leases),
// fallback_on or fallback_off (a FailOver policy leaving its failing store
// and going back to it).
//
// A series appears at its first event: a policy that never failed open
// has no failed_open series stuck at zero. Every label value is a policy
// name or a fixed word, and an Event carries no key, user or client
// address, so the series are a small multiple of the policies whatever the
// traffic, and no personal data reaches Prometheus.
//
// # Alerts
//
// More than 1% of a policy's store calls failing (while they fail, every
// request is failed open, failed closed or sent to the fallback):
//
//	sum by (policy, op) (rate(throttle_store_errors_total[10m]))
//	  / sum by (policy, op) (rate(throttle_store_duration_seconds_count[10m])) > 0.01
//
// More than a fifth of a policy's requests rejected, with "for: 15m": a
// window or quota too tight, or a client retrying in a loop:
//
//	sum by (policy) (rate(throttle_requests_total{outcome="rejected"}[5m]))
//	  / sum by (policy) (rate(throttle_requests_total[5m])) > 0.2
package promthrottle
