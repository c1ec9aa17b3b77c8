package throttle

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// Lease is a held key. It is returned only by a successful acquisition, so
// holding one means the key was yours when the store answered. It expires by
// itself after its TTL unless extended; see the package documentation for
// what a lease can and cannot guarantee.
//
// A Lease is safe for concurrent use.
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

// Fence returns the fencing token of the acquisition when the policy asked for
// one (Policy.Fence), else 0. It strictly increases for the key across every
// process sharing the store: pass it to the resource you write to and have
// the resource refuse writes with a fence lower than one it has seen, which
// makes a holder that lost its lease (a GC pause, a network partition)
// harmless. See the package documentation.
func (ls *Lease) Fence() int64 { return ls.fence }

// ValidFor returns how long the lease is surely still held, counted from when
// the last acquire or extend was sent, less an allowance for clock drift
// between the store and this process (1% of the TTL plus 2 ms).
// Zero or less means the key may already be gone.
func (ls *Lease) ValidFor() time.Duration {
	return time.Duration(ls.validUntil.Load() - monoNow())
}

// Release frees the key if the lease still holds it (for a reentrant key,
// drops one hold). It returns nil on success, an error matching ErrNotHeld
// when the key expired or belongs to someone else now (nothing is freed), or
// an error matching ErrStore. Releasing twice returns ErrNotHeld the second time.
//
// Release runs even when ctx is already cancelled (a finished request still
// frees its key): it uses ctx's values but not its cancellation, bounded by
// the policy's Timeout.
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

// Extend sets the key's time to live to ttl if the lease still holds it, and
// moves ValidFor accordingly. It returns an error matching ErrNotHeld when the
// lease was lost, or one matching ErrStore. KeepAlive calls it for you.
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
