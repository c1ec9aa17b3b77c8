package throttle

import "sync/atomic"

// Stats are a Limiter's counters since it was made. Export them to your
// metrics system to see contention, store health and lost leases.
type Stats struct {
	// Acquired counts successful acquisitions (including fallback ones).
	Acquired uint64
	// Rejected counts acquisition attempts that found the key held (a
	// waiting acquisition counts each attempt).
	Rejected uint64
	// StoreErrors counts acquisitions the store could not answer.
	StoreErrors uint64
	// FailedOpen counts requests Admit let through unguarded because the
	// store failed under FailOpen.
	FailedOpen uint64
	// Fallback counts acquisitions served by Policy.Fallback under FailOver.
	Fallback uint64
	// Lost counts leases lost while held (found by KeepAlive).
	Lost uint64
}

type counters struct {
	acquired, rejected, storeErrors, failedOpen, fallback, lost atomic.Uint64
}

// Stats returns a snapshot of the limiter's counters.
func (l *Limiter) Stats() Stats {
	c := &l.stats
	return Stats{
		Acquired:    c.acquired.Load(),
		Rejected:    c.rejected.Load(),
		StoreErrors: c.storeErrors.Load(),
		FailedOpen:  c.failedOpen.Load(),
		Fallback:    c.fallback.Load(),
		Lost:        c.lost.Load(),
	}
}
