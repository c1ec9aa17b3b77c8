package throttle

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// Lease is a held key, returned only by a successful acquisition. It expires
// by itself after its TTL unless extended. It is safe for concurrent use.
type Lease struct {
	l         *Limiter
	store     Store
	key       string
	token     string
	ttl       time.Duration
	fence     int64
	holds     int
	reentrant bool

	// validUntil is the monotonic time (see monoNow) until which the lease
	// is surely still held: the time the last acquire or extend was sent,
	// plus the TTL, less the clock drift allowance.
	validUntil atomic.Int64
	released   atomic.Bool
}

func newLease(l *Limiter, st Store, req store.Request, g store.Grant, sent time.Time) *Lease {
	ls := &Lease{l: l, store: st, key: req.Key, token: req.Token, ttl: req.TTL,
		fence: g.Fence, holds: g.Holds, reentrant: req.Reentrant}
	ls.setValid(sent)
	return ls
}

func (ls *Lease) setValid(sent time.Time) {
	ls.validUntil.Store(int64(sent.Sub(monoStart) + ls.ttl - store.Drift(ls.ttl)))
}

// Fence returns the acquisition's fencing token under Policy.Fence, else 0.
// It strictly increases for the key across every process sharing the store;
// see the package documentation for how to use it.
func (ls *Lease) Fence() int64 { return ls.fence }

// ValidFor returns how long the lease is surely still held: from when the
// last acquire or extend was sent, less a clock drift allowance of 1% of the
// TTL plus 2 ms. Zero or less means the key may already be gone.
func (ls *Lease) ValidFor() time.Duration {
	return time.Duration(ls.validUntil.Load() - monoNow())
}

// Release frees the key if the lease still holds it (a reentrant key loses
// one hold). It fails with ErrNotHeld when the key expired or changed hands
// (nothing is freed, and a second Release gets it too) or with ErrStore. It
// runs even when ctx is cancelled, bounded by Policy.Timeout instead.
func (ls *Lease) Release(ctx context.Context) error {
	if ls.released.Swap(true) {
		return ErrNotHeld
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ls.l.p.Timeout)
	defer cancel()
	out, err := ls.store.Release(ctx, ls.key, ls.token)
	if err != nil {
		return &storeError{op: "release", err: err}
	}
	if out == store.OK || out == store.StillHeld {
		return nil
	}
	return ErrNotHeld
}

// Extend sets the key's time to live to ttl if the lease still holds it. It
// fails with ErrNotHeld when the lease was lost, or with ErrStore.
func (ls *Lease) Extend(ctx context.Context, ttl time.Duration) error {
	if ttl < time.Millisecond {
		return invalid("extend ttl %v is shorter than 1ms", ttl)
	}
	if ls.released.Load() {
		return ErrNotHeld
	}
	ctx, cancel := context.WithTimeout(ctx, ls.l.p.Timeout)
	defer cancel()
	sent := time.Now()
	out, err := ls.store.Extend(ctx, ls.key, ls.token, ttl)
	if err != nil {
		return &storeError{op: "extend", err: err}
	}
	if out != store.OK {
		return ErrNotHeld
	}
	ls.validUntil.Store(int64(sent.Sub(monoStart) + ttl - store.Drift(ttl)))
	return nil
}
