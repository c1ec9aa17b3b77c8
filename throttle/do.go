package throttle

import (
	"context"
	"errors"
	"fmt"
)

// Do runs fn while holding the key for id, for work outside HTTP such as
// background jobs: it acquires under Policy.LeaseTTL whatever the policy's Mode
// (waiting up to Policy.Wait), keeps the lease alive while fn runs (see
// KeepAlive), then stops the refresher and releases.
//
// fn's context is cancelled with cause ErrLost the moment the lease is lost,
// so that fn can stop before it does harm; it carries the lease (LeaseFrom,
// for the fencing token) and, under a Reentrant policy, the owner, so code
// that fn calls can take the same key again without blocking itself.
//
// Do returns the acquisition error (ErrContended, ErrStore, ctx.Err()) when
// fn did not run; otherwise fn's error, joined with an ErrLost error when the
// lease was lost while fn ran.
func (l *Limiter) Do(ctx context.Context, id string, fn func(context.Context) error) error {
	lease, err := l.acquireKey(ctx, l.key(id), l.p.LeaseTTL)
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
			_ = lease.Release(ctx)
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
