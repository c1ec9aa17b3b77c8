package throttle

import (
	"context"
	"errors"
	"fmt"
)

// Do runs fn while holding the key for id, for work such as background jobs:
// it acquires for the TTL whatever the Mode (waiting up to
// Wait), keeps the lease alive while fn runs (see KeepAlive), and
// releases when fn returns or panics. fn's context carries the lease
// (LeaseFrom) and is cancelled with cause ErrLost if the lease is lost.
//
// Do returns the acquisition's error when fn did not run; otherwise fn's
// error, joined with ErrLost when the lease was lost meanwhile.
func (l *limiter) Do(ctx context.Context, id string, fn func(context.Context) error) error {
	lease, err := l.acquire(ctx, id, l.p.TTL)
	if err != nil {
		return err
	}
	work, stop := lease.KeepAlive(ctx)
	finished := false
	defer func() {
		// fn panicked or called runtime.Goexit: stop the refresher and
		// free the key before the panic goes on up the stack.
		if !finished {
			stop()
			if lease.Release(ctx) == nil {
				l.observeRelease(ctx, lease, "panic")
			}
		}
	}()
	err = fn(work)
	finished = true
	stop()
	lost := context.Cause(work)
	if !errors.Is(lost, ErrLost) {
		lost = nil
	}
	rerr := lease.Release(ctx)
	if rerr == nil {
		reason := "done"
		if err != nil {
			reason = "failed"
		}
		l.observeRelease(ctx, lease, reason)
	}
	if lost == nil && errors.Is(rerr, ErrNotHeld) {
		lost = fmt.Errorf("%w: the key had expired or changed hands when the work returned", ErrLost)
	}
	if lost != nil {
		return errors.Join(err, lost)
	}
	if err == nil && rerr != nil {
		return rerr
	}
	return err
}

// observeRelease tells the Observer that lease was released for reason.
func (l *limiter) observeRelease(ctx context.Context, lease *Lease, reason string) {
	if l.p.Observer != nil {
		l.observe(ctx, Event{Kind: "released", Hold: lease.Held(), Reason: reason})
	}
}
