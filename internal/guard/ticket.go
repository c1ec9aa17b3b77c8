package guard

import (
	"context"
	"errors"
	"net/http"

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

// Begin decides a request whose identity is id. On admission it returns the
// context the handler must run with (ctx itself unless the policy puts the
// lease in it: Exclusive, Fence or Reentrant) and the ticket to Finish;
// otherwise the rejection to answer with.
func Begin(ctx context.Context, l *throttle.Limiter, id string) (context.Context, Ticket, *throttle.Rejection) {
	lease, rej := l.Admit(ctx, id)
	if rej != nil || lease == nil {
		return ctx, Ticket{}, rej
	}
	p := l.Policy()
	t := Ticket{lease: lease, mode: p.Mode, fail: p.Failed}
	switch {
	case p.Mode == throttle.Exclusive:
		ctx, t.stop = lease.KeepAlive(ctx)
	case p.Fence || p.Reentrant:
		ctx = throttle.ContextWithLease(ctx, lease)
	}
	return ctx, t, nil
}

// Finish ends the request's hold once the handler has returned with status
// (or panicked): Window keeps the key for its window; Dedupe releases it when
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
	case throttle.Window:
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

// KeyRejection answers a request whose key could not be built: 400, or the
// status the key function's error carries (413 for an over-long body).
func KeyRejection(l *throttle.Limiter, err error) *throttle.Rejection {
	p := l.Policy()
	status := http.StatusBadRequest
	var hs interface{ HTTPStatus() int }
	if errors.As(err, &hs) {
		if s := hs.HTTPStatus(); s >= 400 && s < 500 {
			status = s
		}
	}
	return &throttle.Rejection{Status: status, Reason: throttle.ReasonBadKey,
		Policy: p.Name, Mode: p.Mode, Window: p.TTL(), Err: err}
}
