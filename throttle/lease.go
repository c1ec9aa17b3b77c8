package throttle

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

// Lease is a held key, returned only by a successful acquisition. It
// expires by itself after its TTL unless extended. It is safe for
// concurrent use.
type Lease struct {
	l          *limiter
	key, token string
	ttl        time.Duration
	fence      int64
	validUntil atomic.Int64 // monoNow until which the key is surely held: sent + TTL - drift
	since      int64        // monoNow when the acquisition was sent
	holds      int32
	holders    int32 // Grant.Holders
	released   atomic.Bool
	onFallback bool // the Fallback granted the lease (FailOver while the store is down)
	mirrored   bool // the Fallback mirrors the store's hold (see tryFailOver)
	reentrant  bool
	keep       *refresher // a Replay's in-flight mark: refreshed until recorded or released
	view       sharedCall // the context of Release's store call, when it joins a shared one
}

// newLease returns the lease of req, sent at sent, that the store (or the
// Fallback) granted with g, whose TTL may differ from the one asked.
func newLease(l *limiter, fallback bool, req store.Request, g store.Grant, sent int64) *Lease {
	ls := &Lease{l: l, key: req.Key, token: req.Token, ttl: req.TTL, since: sent,
		fence: g.Fence, holds: int32(g.Holds), holders: int32(g.Holders), reentrant: req.Reentrant, onFallback: fallback}
	ttl := g.TTL
	if ttl <= 0 {
		ttl = req.TTL
	}
	ls.setValid(sent, ttl)
	return ls
}

// Holders returns how many held the key when the lease was granted, this
// one included, under LockConfig.Holders above 1; otherwise 1. The
// RateLimit fields of an admitted request show the places left.
func (ls *Lease) Holders() int { return max(int(ls.holders), 1) }

// holder returns the store that holds the key: the store or the Fallback.
func (ls *Lease) holder() store.Store {
	if ls.onFallback {
		return ls.l.p.Fallback
	}
	return ls.l.store
}

// mirror returns the Fallback when it mirrors the hold, or nil.
func (ls *Lease) mirror() store.Store {
	if ls.mirrored {
		return ls.l.p.Fallback
	}
	return nil
}

func (ls *Lease) held() time.Duration { return time.Duration(monoNow() - ls.since) }

// setValid records that the key, as of sent, lives for ttl.
func (ls *Lease) setValid(sent int64, ttl time.Duration) {
	ls.validUntil.Store(sent + int64(ttl-storekit.Drift(ttl)))
}

// Fence returns the acquisition's fencing token under LockConfig.Fence, else
// 0. It strictly increases for the key across every process sharing the store.
func (ls *Lease) Fence() int64 { return ls.fence }

// ValidFor returns how long the lease is surely still held: its TTL from
// when the last acquire or extend was sent, less a clock drift allowance.
// Zero or less means the key may already be gone.
func (ls *Lease) ValidFor() time.Duration {
	return time.Duration(ls.validUntil.Load() - monoNow())
}

// Release frees the key if the lease still holds it (a reentrant key loses
// one hold). It fails with ErrNotHeld when the key expired or changed hands
// (nothing is freed, and a second Release gets it too) or with ErrStore,
// after which the release is sent again in the background until the store
// answers (but a reentrant key's, which could drop an outer hold). It runs
// even when ctx is cancelled, bounded by Options.Timeout instead.
func (ls *Lease) Release(ctx context.Context) error {
	ls.keep.halt()
	if ls.released.Swap(true) {
		return ErrNotHeld
	}
	if m := ls.mirror(); m != nil {
		mctx, c := ls.l.detach(ctx, m, nil)
		_, err := m.Release(mctx, ls.key, ls.token)
		if err = c.end(err); err != nil {
			ls.l.logStoreError("release-fallback", err)
		}
	}
	start := ls.l.since()
	st := ls.holder()
	cctx, c := ls.l.detach(ctx, st, &ls.view)
	out, err := st.Release(cctx, ls.key, ls.token)
	err = c.end(err)
	ls.l.storeCall(ctx, "release", start, err)
	if err != nil {
		// The release may not have reached the store: it is sent again in
		// the background until it is answered or the key would have expired,
		// so that the key is not left to a holder that let it go.
		if left := ls.ValidFor(); left > 0 && !ls.reentrant {
			req := store.Request{Key: ls.key, Token: ls.token, TTL: left + ls.ttl/50}
			ls.l.releaseLater(ctx, st, req, monoNow(), err)
		}
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
	sent := monoNow()
	st := ls.holder()
	cctx, c := ls.l.watch(ctx, st, sent, 0)
	out, err := st.Extend(cctx, ls.key, ls.token, ttl)
	err = c.end(err)
	ls.l.storeCall(ctx, "extend", sent, err)
	if err != nil {
		return &storeError{op: "extend", err: err}
	}
	if m := ls.mirror(); m != nil && out == store.OK {
		mctx, c := ls.l.watch(ctx, m, monoNow(), 0)
		_, err := m.Extend(mctx, ls.key, ls.token, ttl)
		if err = c.end(err); err != nil {
			ls.l.logStoreError("extend-fallback", err)
		}
	}
	if out != store.OK {
		return ErrNotHeld
	}
	ls.setValid(sent, ttl)
	return nil
}
