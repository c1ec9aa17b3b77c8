package overload

import "time"

// Stats is a snapshot of a Limiter. promthrottle and otelthrottle read
// it at each collection (their Observer's Overload method), so that
// metrics of the limiter's state cost the permit path nothing.
type Stats struct {
	// Limit is how many requests may be in flight now (half the limit
	// while a probe measures the base latency); InFlight how many are,
	// NeverShed ones included; Queued how many wait.
	Limit, InFlight, Queued int
	// QueueDelay is how long the oldest waiting request has waited.
	QueueDelay time.Duration
	// BaseLatency is the latency the limit aims near: the median of
	// requests that did not wait for each other (0 until measured).
	BaseLatency time.Duration
	// Admitted counts permits granted; ShedLimit, ShedQueueTimeout and
	// ShedQueueFull the requests shed, by Reason; Canceled the waiters
	// whose context ended first.
	Admitted, ShedLimit, ShedQueueTimeout, ShedQueueFull, Canceled uint64
}

// Stats returns a snapshot of l.
func (l *Limiter) Stats() Stats {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	s := Stats{
		Limit: l.a.permits(), InFlight: l.inFlight, Queued: l.q.n, BaseLatency: time.Duration(l.a.base),
		Admitted: l.c.admitted, ShedLimit: l.c.limit, ShedQueueTimeout: l.c.timeout, ShedQueueFull: l.c.full,
		Canceled: l.c.canceled,
	}
	if l.q.oldest != nil {
		s.QueueDelay = time.Duration(now - l.q.oldest.since)
	}
	return s
}
