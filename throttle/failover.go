package throttle

import (
	"context"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// tryFailOver makes one acquisition under FailOver. The fallback mirrors
// every hold of this limiter, and is asked first, always: a key held on the
// store is refused by the fallback when the store fails, and a key the
// fallback granted during an outage is refused there when the store is
// back. So within one process a key is never granted twice.
func (l *limiter) tryFailOver(ctx context.Context, req store.Request, sent int64) (*Lease, time.Duration, error) {
	fb := l.p.Fallback
	gf, err := l.call(ctx, fb, req, 0)
	if err != nil {
		l.logStoreError("acquire-fallback", err)
		return l.tryPrimary(ctx, req, nil, sent)
	}
	if !gf.Acquired {
		l.stats.rejected.Add(1)
		return nil, gf.Remaining, nil
	}
	if l.health.skip() {
		l.stats.fallback.Add(1)
		return l.granted(ctx, true, nil, req, gf, sent)
	}
	return l.tryPrimary(ctx, req, &gf, sent)
}

// tryPrimary asks the store after the fallback granted gf (nil when the
// fallback failed), and keeps the fallback's hold as the lease's mirror.
func (l *limiter) tryPrimary(ctx context.Context, req store.Request, gf *store.Grant, sent int64) (*Lease, time.Duration, error) {
	fb := l.p.Fallback
	g, err := l.call(ctx, l.store, req, monoNow())
	if err != nil {
		if ctx.Err() != nil || gf == nil || isShed(err) || isFull(err) {
			// A shed or full call's store answers: the fallback must not grant
			// what the store may be granting to another process.
			if gf != nil {
				l.releaseLocal(fb, req)
			}
			return nil, 0, l.failed(ctx, l.store, req, sent, err)
		}
		// The fallback's grant serves; the store's possible one is freed later.
		l.releaseLater(ctx, l.store, req, sent, err)
		l.countFailure(l.store, "acquire", err)
		l.stats.fallback.Add(1)
		return l.granted(ctx, true, nil, req, *gf, sent)
	}
	l.health.answered(l)
	if !g.Acquired && gf != nil {
		l.releaseLocal(fb, req)
	}
	var mirror store.Store
	if gf != nil {
		mirror = fb
	}
	return l.granted(ctx, false, mirror, req, g, sent)
}

// releaseLocal gives back the fallback's hold of a request that did not get
// the key.
func (l *limiter) releaseLocal(fb store.Store, req store.Request) {
	ctx, cancel := context.WithTimeout(context.Background(), l.p.Timeout)
	defer cancel()
	if _, err := fb.Release(ctx, req.Key, req.Token); err != nil {
		l.logStoreError("release-fallback", err)
	}
}
