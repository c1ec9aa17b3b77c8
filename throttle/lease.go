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
	l     *Limiter
	store Store
	// mirror is the fallback's hold of the same key under FailOver (see
	// tryFailOver), released and extended with the store's; nil otherwise.
	mirror    Store
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
	// since is the monotonic time (see monoNow) the acquisition was sent,
	// for the hold time an Observer is told.
	since int64
}

func newLease(l *Limiter, st Store, req store.Request, g store.Grant, sent time.Time) *Lease {
	ls := &Lease{l: l, store: st, key: req.Key, token: req.Token, ttl: req.TTL,
		fence: g.Fence, holds: g.Holds, reentrant: req.Reentrant}
	// The key's real TTL may differ from the one asked: a re-entry of a
	// longer hold keeps it, a retried acquisition has what is left of it
	// (see store.Grant.TTL). Stores that do not say get req.TTL.
	ttl := g.TTL
	if ttl <= 0 {
		ttl = req.TTL
	}
	ls.setValid(sent, ttl)
	ls.since = int64(sent.Sub(monoStart))
	return ls
}

// Held returns how long ago the lease's acquisition was sent: how long the
// key has been held, for logs and metrics.
func (ls *Lease) Held() time.Duration { return time.Duration(monoNow() - ls.since) }

// setValid records that the key, as of sent, lives for ttl.
func (ls *Lease) setValid(sent time.Time, ttl time.Duration) {
	ls.validUntil.Store(int64(sent.Sub(monoStart) + ttl - store.Drift(ttl)))
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
	if ls.mirror != nil {
		if _, err := ls.mirror.Release(ctx, ls.key, ls.token); err != nil {
			ls.l.logStoreError("release-fallback", err)
		}
	}
	start := ls.l.startCall()
	out, err := ls.store.Release(ctx, ls.key, ls.token)
	ls.l.storeCall(ctx, "release", start, err)
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
	if ls.l.p.Observer != nil {
		ls.l.storeCall(ctx, "extend", sent, err)
	}
	if err != nil {
		return &storeError{op: "extend", err: err}
	}
	if ls.mirror != nil && out == store.OK {
		if _, err := ls.mirror.Extend(ctx, ls.key, ls.token, ttl); err != nil {
			ls.l.logStoreError("extend-fallback", err)
		}
	}
	if out != store.OK {
		return ErrNotHeld
	}
	ls.setValid(sent, ttl)
	return nil
}
