// Package overload keeps a service out of overload, in each process, with
// no store round trip. Per-user limits protect a service from one user;
// when traffic doubles or a backend slows down, every request queues in
// the process, gets slow, and is retried, while each user stays within
// quota. A Limiter admits requests up to a limit of requests in flight
// that follows their latency, lets the rest wait in a queue that sheds by
// queueing delay, and refuses what cannot be served in time with a
// *Refusal (HTTP: 503 with Retry-After). Nothing needs tuning:
//
//	lim, _ := overload.New(overload.Config{Name: "report"})
//	p, err := lim.Acquire(ctx, overload.Normal) // *Refusal, or ctx.Err()
//	if err != nil { … }
//	defer p.End()
//
// The limit. Each window of at least 8 requests and two base latencies
// compares their median latency with a target, 1.25 × the base latency
// (the median of requests that did not wait for each other). Over the
// target, the limit falls by the gradient target/median (at most by half
// in a window), as in Envoy's adaptive concurrency filter and Netflix's
// Gradient limits, but never below the requests that keep the service
// busy (requests completed per second × base latency, the product by
// which TCP BBR sizes its window) with the target's 25% to spare, so that
// a slot that frees finds a request ready. At or under the target it
// rises by the gradient, and doubles per window after 50 windows in a row
// under it, up to twice the most requests in flight seen at that latency
// (at least 8): room for a burst, not so much that the next overload
// starts far above what the service takes. The base latency is measured
// again every 30 to 37.5 s by a probe that halves the limit until 8
// requests granted since have ended; and sooner when three windows in a
// row end well over the target with the limit on its floor (the service
// may have become slower for good). A periodic probe does not halve the
// limit when 8 requests since the last probe already ran as a probe runs
// them (with no more than half the limit in flight), and no window since
// was slower at no more in flight: under overload a halved limit idles
// part of the service, and a quieter moment before it measured the same.
//
// The queue. When every permit is taken a Normal request waits, as
// CoDel is applied to request queues: at most the interval (100 ms, or
// the base latency if longer), or the target (the interval / 20: 5 ms)
// once the service showed overload within the last interval (a waiter
// shed, or a queue that did not empty for an interval). Waiters are served
// oldest first, and newest first under overload: those whose clients are
// likeliest still to be there. A waiter whose context ends leaves at once.
// At most 64 wait, or 4 per permit.
//
// The limit compares latencies, so give each group of requests of like
// cost a Limiter of its own: a route of 1 ms and one of 1 s under one
// limit would look overloaded whenever the slow one runs. Mark health
// checks NeverShed, so that a load balancer never takes a busy process
// out, and background work ShedFirst.
//
// A Limiter runs no goroutine and allocates nothing on the permit path;
// docs/performance.md in the repository has its figures against
// failsafe-go's adaptive limiter and fixed limits.
package overload
