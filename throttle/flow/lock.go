package flow

import (
	"context"
	"time"

	"github.com/go-throttle/throttle/throttle"
)

// beginLock is begin for a Lock: the call holds its key with Lock.Hold
// where nothing more is needed, else with a Lease (kept alive for
// Exclusive, in the context for Fence and Reentrant).
func (j *Job) beginLock(ctx context.Context, id string, p *Permit, ref *Refusal) bool {
	h := &p.hold
	var err error
	if j.holds {
		h.key, err = j.lock.Hold(ctx, id)
	} else {
		h.lease, err = j.lock.Admit(ctx, id)
	}
	if err != nil {
		h.key, h.lease = throttle.Hold{}, nil // whatever came with the error is not held
		return j.refuse(err, Limits{}, p, ref)
	}
	h.job = j
	p.limits = j.lockLimits(0, j.heldT)
	switch {
	case h.lease == nil && h.key == (throttle.Hold{}): // failed open
		p.limits = j.policy()
	case h.lease == nil:
	case j.mode == throttle.Exclusive:
		if j.holders > 1 {
			p.limits = j.lockLimits(j.holders-h.lease.Holders(), -1)
		}
		p.ctx, h.stop = h.lease.KeepAlive(ctx)
	case j.fence || j.reentrant:
		p.ctx = throttle.WithLease(ctx, h.lease)
	}
	if h.lease != nil && j.observer != nil {
		h.since = time.Since(epoch)
	}
	return true
}
