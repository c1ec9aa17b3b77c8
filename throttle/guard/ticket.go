package guard

import (
	"context"

	"github.com/go-throttle/throttle/throttle"
)

// Ticket is an admitted request's hold on its key, which Run or Finish ends
// as the policy's mode says. Every ticket Begin returns must be ended once:
// an Exclusive lease is otherwise refreshed, and its key held, for ever.
// The zero Ticket (a request let through because the store failed open)
// holds nothing, and ending it does nothing.
type Ticket struct {
	lease *throttle.Lease
	stop  context.CancelFunc
	mode  throttle.Mode
	fail  func(int) bool
}

// Begin decides a request whose identity is id with Limiter.Admit, so the
// policy's WhenStoreFails applies. When the request is admitted, Begin
// returns the context the handler must run with (ctx itself unless the
// policy puts the lease in it: Exclusive, Fence or Reentrant; an Exclusive
// context is cancelled, with cause throttle.ErrLost, if the lease is lost)
// and the ticket to Run it with. Otherwise it returns ctx and the rejection
// to answer with. A request let through because the store failed open gets
// a zero Ticket.
func Begin(ctx context.Context, l *throttle.Limiter, id string) (context.Context, Ticket, *Rejection) {
	lease, err := l.Admit(ctx, id)
	if err != nil {
		return ctx, Ticket{}, rejection(l, err)
	}
	if lease == nil {
		return ctx, Ticket{}, nil
	}
	p := l.Policy()
	t := Ticket{lease: lease, mode: p.Mode, fail: p.Failed}
	switch {
	case p.Mode == throttle.Exclusive:
		ctx, t.stop = lease.KeepAlive(ctx)
	case p.Fence || p.Reentrant:
		ctx = throttle.WithLease(ctx, lease)
	}
	return ctx, t, nil
}

// Finish ends the request's hold once the handler has returned with status
// (or panicked): Cooldown keeps the key for its window; Dedupe releases it
// when the handler failed (Policy.Failed) or panicked; Exclusive stops
// refreshing and releases. It is Run for frameworks whose hooks before and
// after the handler are separate, so that nothing can be wrapped around it.
// ctx is the context Begin returned; the release runs even if it was
// cancelled. Calling Finish again does nothing.
func (t Ticket) Finish(ctx context.Context, status int, panicked bool) {
	if t.lease == nil {
		return
	}
	if t.stop != nil {
		t.stop()
	}
	switch t.mode {
	case throttle.Cooldown:
		return
	case throttle.Dedupe:
		if !panicked && !t.fail(status) {
			return
		}
	}
	// A lost lease or a failed release is not the client's business: the
	// key then expires by itself, which the store error log already shows.
	_ = t.lease.Release(ctx)
}

// Run runs the rest of the request (the handler, or the framework's chain)
// and then ends the hold, as Finish does, with the status next reports: the
// one the client got, 200 when the handler wrote nothing. When next panics or
// calls runtime.Goexit, the hold ends as a failure. Nothing is recovered: the
// panic keeps unwinding with its own value and stack, to http.Server or the
// framework's recovery middleware, once the key is released.
func (t Ticket) Run(ctx context.Context, next func() (status int)) {
	returned := false
	defer func() {
		if !returned {
			t.Finish(ctx, 0, true)
		}
	}()
	status := next()
	returned = true
	t.Finish(ctx, status, false)
}
