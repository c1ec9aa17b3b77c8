package throttle

import (
	"context"
	"errors"

	"github.com/go-throttle/throttle/throttle/store"
)

// Reset frees id's key whoever holds it, with its recorded answer, so that
// the next request takes it at once: an operator's answer to a user stuck
// behind a lock. The holder finds its lease lost (ErrNotHeld) when it
// extends or releases; fencing tokens keep increasing, so that its late
// writes stay rejectable. It fails with ErrStore or ctx.Err().
func (k *Lock) Reset(ctx context.Context, id string) error {
	return k.l.delete(ctx, []string{k.l.key(id)})
}

// Reset frees id's key and forgets its recorded answer, as Lock.Reset does:
// the next request with the key runs afresh.
func (r *Replay) Reset(ctx context.Context, id string) error {
	return r.l.delete(ctx, []string{r.l.key(id)})
}

// delete removes keys from the store, and from the Fallback under FailOver,
// bounded by Timeout as any store call.
func (l *limiter) delete(ctx context.Context, keys []string) error {
	stores := []store.Store{l.store}
	if l.p.WhenStoreFails == FailOver {
		stores = append(stores, l.p.Fallback)
	}
	var errs []error
	for _, st := range stores {
		sent := l.since()
		err := l.callStore(ctx, st, 0, func(ctx context.Context) error { return st.Delete(ctx, keys...) })
		l.storeCall(ctx, "delete", sent, callFailed(ctx, err))
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return ctxErr
			}
			errs = append(errs, &storeError{op: "delete", err: err})
		}
	}
	return errors.Join(errs...)
}
