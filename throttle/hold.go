package throttle

import (
	"context"

	"github.com/go-throttle/throttle/throttle/store"
)

// Hold is a lock key held for a request that will at most give it back:
// all a Dedupe or Cooldown middleware needs. Lock.Hold makes one without a
// Lease where the lock needs none, sparing an admission on an in-memory
// store the Lease's allocation. The zero Hold, the only one equal to Hold{},
// holds nothing: a request let through because the store failed open gets it.
type Hold struct {
	lease      *Lease
	l          *limiter // with key and token: the key held without a lease
	key, token string
}

// Release frees the key if h still holds it, as Lease.Release does.
func (h Hold) Release(ctx context.Context) error {
	switch {
	case h.lease != nil:
		return h.lease.Release(ctx)
	case h.l != nil:
		req := store.Request{Key: h.key, Token: h.token, TTL: h.l.p.TTL}
		return newLease(h.l, false, req, store.Grant{Acquired: true}, monoNow()).Release(ctx)
	}
	return ErrNotHeld
}

// Hold is Admit for a request that needs its key only to give it back
// early: the middleware's Dedupe and Cooldown. Its outcomes are Admit's. A
// lock whose keys are held only in this process's memory, without Fence,
// Reentrant, Wait or an Observer, makes no Lease.
func (k *Lock) Hold(ctx context.Context, id string) (Hold, error) {
	l := k.l
	if !l.leaseless {
		lease, err := k.Admit(ctx, id)
		if lease == nil {
			return Hold{}, err
		}
		return Hold{lease: lease}, err
	}
	req := l.request(ctx, id, l.p.TTL)
	g, err := l.ask(ctx, req, 0)
	switch {
	case err != nil:
	case !g.Acquired:
		l.stats.rejected.Add(1)
		err = &ContendedError{RetryAfter: g.Remaining}
	default:
		l.stats.acquired.Add(1)
		return Hold{l: l, key: req.Key, token: req.Token}, nil
	}
	return Hold{}, l.admitted(ctx, false, 0, err)
}
