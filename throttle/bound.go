package throttle

import (
	"context"
	"sync/atomic"
	"time"
)

// bounds hands out the contexts that bound store calls by Policy.Timeout.
//
// The plain way, context.WithTimeout per call, costs a timer and five
// allocations, and the timer alone measurably slows a lone caller's round
// trip. A caller whose context can never be cancelled (Done returns nil:
// context.Background, a context of values only, context.WithoutCancel)
// does not need a context of its own: every such call starting within the
// same short slice of time can share one, whose deadline is Timeout after
// the end of the slice. Each call then gets between Timeout and Timeout +
// Timeout/8 (the slice), and the timer is paid once a slice instead of
// once a call. A context that can be cancelled still gets WithTimeout:
// only the context package can join its cancellation to the bound without
// a goroutine.
type bounds struct {
	timeout time.Duration
	cur     atomic.Pointer[bound]
}

// bound is the context shared by the calls of one slice.
type bound struct {
	ctx    context.Context
	cancel context.CancelFunc // unused: ctx ends by its deadline
	until  int64              // monoNow at the end of the slice
}

// noCancel is the cancel function of a shared bound: the bound ends by its
// deadline, and other calls still use it.
func noCancel() {}

// bind returns ctx bounded by the timeout, and the function to call when
// the store call is done. A ctx that ends sooner than the timeout is
// returned as it is.
func (b *bounds) bind(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx.Done() != nil {
		if d, ok := ctx.Deadline(); ok && time.Until(d) <= b.timeout {
			return ctx, noCancel
		}
		return context.WithTimeout(ctx, b.timeout)
	}
	shared := b.shared()
	if ctx == context.Background() || ctx == context.TODO() {
		return shared, noCancel
	}
	return &boundValues{Context: shared, values: ctx}, noCancel
}

// detach is bind for a call that must run even when the caller gave up
// (Release, Record): ctx's values without its cancellation, bounded.
func (b *bounds) detach(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx.Done() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	return b.bind(ctx)
}

// shared returns the current slice's context, starting a new slice when
// the last one is over.
func (b *bounds) shared() context.Context {
	now := monoNow()
	if c := b.cur.Load(); c != nil && now < c.until {
		return c.ctx
	}
	slice := max(b.timeout/8, time.Microsecond)
	ctx, cancel := context.WithDeadline(context.Background(), monoTime(now).Add(b.timeout+slice))
	// Racing goroutines may each start a slice; the last one stored
	// serves the calls after them, and the others' contexts just expire.
	b.cur.Store(&bound{ctx: ctx, cancel: cancel, until: now + int64(slice)})
	return ctx
}

// boundValues is a shared bound that carries the values of the caller's
// context (a trace span, say), which its client may read.
type boundValues struct {
	context.Context                 // the shared bound: Deadline, Done, Err
	values          context.Context // the caller's, never cancelled
}

// Value looks in the caller's context first, then in the bound. A context
// that is never cancelled holds no cancellation of the context package's
// own, so a context derived from this one (say, a per-node timeout) still
// finds the bound's and joins it without a goroutine.
func (c *boundValues) Value(key any) any {
	if v := c.values.Value(key); v != nil {
		return v
	}
	return c.Context.Value(key)
}
