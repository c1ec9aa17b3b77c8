package throttle

import "sync/atomic"

// Stats are a limiter's counters since it was made.
type Stats struct {
	Acquired    uint64 // acquisitions granted, the fallback's included
	Rejected    uint64 // attempts that found the key held (each retry counts)
	StoreErrors uint64 // acquisitions the store could not answer
	FailedOpen  uint64 // requests let through unguarded under FailOpen
	Shed        uint64 // requests turned away (503) because this process waited too long for a store that answers
	Full        uint64 // requests turned away (503) because the store could not take them now: no room for their key, or a Redlock split vote (store.ErrBusy)
	Fallback    uint64 // acquisitions granted by the fallback under FailOver
	Lost        uint64 // leases lost while held
	NotKept     uint64 // Replay responses the store refused to keep (too large, record budget spent)
	NearHits    uint64 // refusals answered by the Redis store's near cache, with no round trip
}

type counters struct {
	acquired, rejected, storeErrors, failedOpen, shed, full, fallback, lost, notKept, nearHits atomic.Uint64
}

func (l *limiter) Stats() Stats {
	c := &l.stats
	return Stats{
		Acquired:    c.acquired.Load(),
		Rejected:    c.rejected.Load(),
		StoreErrors: c.storeErrors.Load(),
		FailedOpen:  c.failedOpen.Load(),
		Shed:        c.shed.Load(),
		Full:        c.full.Load(),
		Fallback:    c.fallback.Load(),
		Lost:        c.lost.Load(),
		NotKept:     c.notKept.Load(),
		NearHits:    c.nearHits.Load(),
	}
}
