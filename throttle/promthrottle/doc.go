// Package promthrottle exports what throttle's limiters (Lock, Quota and
// Replay) decide and how their store behaves as Prometheus metrics, with a Grafana dashboard to match.
// It is a package of its own so that services which do not use Prometheus
// never import its client.
//
// New returns an Observer, which is both the throttle.Observer to set as
// Options.Observer and the prometheus.Collector to register; one serves
// every limiter of the process:
//
//	obs := promthrottle.New(promthrottle.WithMemstore(mem))
//	prometheus.MustRegister(obs)
//	submit, err := throttle.NewLock(st, throttle.LockConfig{Name: "submit",
//		Options: throttle.Options{Observer: obs}})
//	search, err := throttle.NewQuota(st, throttle.QuotaConfig{Name: "search",
//		Options: throttle.Options{Observer: obs}})
//
// Dashboard is a Grafana dashboard of these metrics, for programs that
// provision Grafana; the same file, dashboard.json, can be imported by hand.
//
// # Metrics
//
//	name                             type       labels                 what
//	throttle_requests_total          counter    policy, mode, outcome  requests decided, by outcome
//	throttle_store_duration_seconds  histogram  policy, op             store calls' latency, failed ones included
//	throttle_store_errors_total      counter    policy, op             store calls that failed or timed out
//	throttle_hold_duration_seconds   histogram  policy, mode, reason   how long released keys were held
//	throttle_lease_events_total      counter    policy, event          lease extensions and losses, FailOver switches
//	throttle_memstore_keys           gauge      (none)                 keys in the WithMemstore stores, at scrape time
//
// The mode label is the policy's mode: dedupe, cooldown or exclusive for a
// Lock (its LockConfig.Mode), quota for a Quota, replay for a Replay. The outcome of a request is one of:
//
//	admitted          it went ahead, holding its key or charged to its quota
//	rejected          its key was held or its quota spent (429, or 409 for Exclusive)
//	dry_run_rejected  under Options.DryRun, it would have been rejected and went ahead
//	failed_open       the store failed and it went ahead unguarded (FailOpen)
//	failed_closed     the store failed and it was turned away with 503 (FailClosed)
//	fallback          under FailOver, the Fallback store admitted it
//	key_error         its key or cost could not be built, or its cost is out of range:
//	                  4xx without asking the store
//	replayed          under Replay, it was answered with the first request's recorded response
//
// A request whose client went away before the store answered has no
// outcome. Under Options.DryRun, failed_closed and key_error count requests
// that would have been turned away and went ahead, as dry_run_rejected
// does for rejections.
//
// The op of a store call is acquire, release or extend for the locks of
// Dedupe, Cooldown and Exclusive locks (and Lock.Do), and quota for the
// decisions of Quotas: a quota call neither takes nor frees a
// lock but runs the generic cell rate algorithm in one round trip (a script
// in Redis), so its latency is its own, and filing it under acquire would
// mix two different commands in one distribution. A refund of
// guard.CountOnlyFailures is a quota call too.
//
// Every store call is in the duration histogram, failed ones included (a
// timeout shows up as latency at Options.Timeout), and a failed call is also
// counted in throttle_store_errors_total: a histogram has no error label,
// and adding one would double its series, yet store errors are what the
// dashboard and the alerts below watch first, since while they last every
// request is failed open, failed closed or sent to the fallback. Divided by
// throttle_store_duration_seconds_count they give the error ratio.
//
// The hold histogram is fed when a key is given back: an Exclusive
// request's or a Lock.Do job's when it returns (reason done, failed or
// panic), a Dedupe request's when it failed or panicked. A Dedupe key kept
// for its window, and a Cooldown key, expire in the store and are not
// observed.
//
// The event of throttle_lease_events_total is extended or lost for
// Exclusive and Do leases, and fallback_on or fallback_off when a FailOver
// policy stops asking its failing store and when it goes back. The two
// switches are not leases, but they are events of the same rare and
// per-policy kind, and counting them here lets an operator see when, and
// how often, a FailOver policy narrowed its locks to one process without a
// metric of its own.
//
// A series appears the first time its event is observed: a policy that has
// never failed open has no failed_open series, rather than one stuck at
// zero for every policy and outcome that cannot happen.
//
// # Bounded labels
//
// Every label value is a policy name or a member of a fixed set written in
// this package or the core, so that the number of series is a small
// multiple of the number of policies, whatever the traffic. A key, a user
// id or a client address as a label value would make one series per user:
// the scrape, Prometheus's memory and every query would grow with the user
// base, and the metrics would copy personal data into a system that keeps
// it for months. The Events the core reports carry none of them, so this
// package cannot leak one.
//
// # Alerts
//
// Store errors rising: more than 1% of a policy's store calls failed over
// ten minutes:
//
//	sum by (policy, op) (rate(throttle_store_errors_total[10m]))
//	  / sum by (policy, op) (rate(throttle_store_duration_seconds_count[10m]))
//	  > 0.01
//
// Rejection ratio above a threshold: a policy turned away more than a fifth
// of its requests for fifteen minutes (with "for: 15m" in the rule), the
// sign of a window or quota too tight or of a client retrying in a loop:
//
//	sum by (policy) (rate(throttle_requests_total{outcome="rejected"}[5m]))
//	  / sum by (policy) (rate(throttle_requests_total[5m]))
//	  > 0.2
//
// # Cost
//
// Observe runs on the request's goroutine. It finds a policy's series with
// one atomic load and one map read, and its counters and histograms are
// resolved the first time they are used and kept, so that in the steady
// state it takes no lock and allocates nothing; BenchmarkMiddleware
// measures it beside the middleware alone.
package promthrottle
