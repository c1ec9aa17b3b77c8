package throttle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-throttle/throttle/internal/storekit"
)

// KeepAlive extends the lease back to its full TTL every TTL/3 until stop is
// called, even after ctx ends, so the key stays held while the work winds
// down. The work's context carries the lease and is cancelled with cause
// ErrLost the moment the lease is lost: the key was taken, extensions failed
// until it ran out, or LockConfig.MaxHold was reached. Call stop before Release.
func (ls *Lease) KeepAlive(ctx context.Context) (context.Context, context.CancelFunc) {
	work, cancel := context.WithCancelCause(ctx)
	work = WithLease(work, ls)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ls.refresh(context.WithoutCancel(work), cancel, quit)
	}()
	var once sync.Once
	return work, func() {
		once.Do(func() {
			close(quit)
			wg.Wait()
			cancel(context.Canceled)
		})
	}
}

func (ls *Lease) refresh(ctx context.Context, cancel context.CancelCauseFunc, quit <-chan struct{}) {
	interval := ls.ttl / 3
	timer := time.NewTimer(interval)
	defer timer.Stop()
	var capped <-chan time.Time
	if max := ls.l.p.MaxHold; max > 0 {
		left := max - (ls.ttl - storekit.Drift(ls.ttl) - ls.ValidFor())
		capTimer := time.NewTimer(left)
		defer capTimer.Stop()
		capped = capTimer.C
	}
	for {
		select {
		case <-quit:
			return
		case <-capped:
			ls.lose(ctx, cancel, fmt.Errorf("%w: hold limit %v reached", ErrLost, ls.l.p.MaxHold))
			return
		case <-timer.C:
		}
		// An extension that answers after the lease ran out is no use.
		ectx, ecancel := context.WithTimeout(ctx, max(ls.ValidFor(), time.Millisecond))
		err := ls.Extend(ectx, ls.ttl)
		ecancel()
		switch {
		case err == nil:
			ls.l.observe(ctx, Event{Kind: "extended"})
			timer.Reset(interval)
		case errors.Is(err, ErrNotHeld):
			ls.lose(ctx, cancel, fmt.Errorf("%w: key %s was taken or deleted", ErrLost, ls.key))
			return
		default: // the store failed: the key may still be ours until the lease runs out
			left := ls.ValidFor()
			if left <= 0 {
				ls.lose(ctx, cancel, fmt.Errorf("%w: could not extend before the lease ran out: %v", ErrLost, err))
				return
			}
			timer.Reset(min(interval/3+time.Millisecond, left))
		}
	}
}

func (ls *Lease) lose(ctx context.Context, cancel context.CancelCauseFunc, cause error) {
	ls.l.stats.lost.Add(1)
	ls.l.observe(ctx, Event{Kind: "lost"})
	ls.l.p.logger().Warn("throttle: lease lost", "policy", ls.l.p.Name, "err", cause)
	cancel(cause)
}
