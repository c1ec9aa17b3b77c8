package guard

import (
	"context"

	"github.com/go-throttle/throttle/throttle"
)

// Ticket is an admitted request's hold on its key. The zero Ticket (a request
// let through because the store failed open) holds nothing and its Finish
// does nothing.
type Ticket struct {
	lease *throttle.Lease
	stop  context.CancelFunc
	mode  throttle.Mode
	fail  func(int) bool
}

// Begin decides a request whose identity is id (see Limiter.Admit). When it
// is admitted, Begin returns the context the handler must run with (ctx
// itself unless the policy puts the lease in it: Exclusive, Fence or
// Reentrant) and the ticket to Run it with; otherwise the rejection to
// answer with. A request let through because the store failed open gets a
// zero Ticket.
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
// (or panicked): Cooldown keeps the key for its window; Dedupe releases it when
// the handler failed or panicked; Exclusive stops refreshing and releases.
// ctx is the request's context; the release runs even if it was cancelled.
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
// and then ends the hold: with the status next reports, or as a failure when
// next panics or calls runtime.Goexit. Nothing is recovered: the panic keeps
// unwinding with its own value and stack, to http.Server or the framework's
// recovery middleware, once the key is released.
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
