package redisalgo

import (
	"context"
	"sync/atomic"
	"time"
)

// chargeCtx is the context of the commands of one quota charge or refund:
// its caller's, but done, for a client that asks, once a deadline the
// client read from it has passed. A charge sent again after Redis ran it
// counts twice, and a client sends again a command whose reply missed its
// deadline unless the context is done by then: go-redis retries a command
// whose read timed out (up to MaxRetries times), and only a done context
// stops it. A limiter's context is not done at its deadline (each reading
// gets a new one, so that a call that queued for a connection still gets a
// whole Timeout for its reply): on a loaded machine, where a reply is read
// too late, go-redis sent the charge again and the caller got a decision
// that counted it twice, with no error. Now the charge fails with
// context.DeadlineExceeded instead; a connection that breaks before the
// deadline (a Redis restart) is still retried, as for every command.
//
// A client that retries at its own read timeout, when the context has no
// deadline (go-redis's ReadTimeout), is not stopped: charges need a
// context with a deadline, as the limiter's calls have.
type chargeCtx struct {
	context.Context
	deadline atomic.Int64 // Unix ns of the latest deadline read; 0: none yet
}

// charging returns the context of a charge or refund (cost not 0) under
// ctx; a peek may be sent again and keeps ctx.
func charging(ctx context.Context, cost int) context.Context {
	if _, ok := ctx.(*chargeCtx); ok || cost == 0 {
		return ctx
	}
	return &chargeCtx{Context: ctx}
}

// Deadline is the caller's, remembered.
func (c *chargeCtx) Deadline() (time.Time, bool) {
	d, ok := c.Context.Deadline()
	if ok {
		c.deadline.Store(d.UnixNano())
	}
	return d, ok
}

// Done is closed once a deadline read has passed, or with the caller's.
func (c *chargeCtx) Done() <-chan struct{} {
	if c.passed() {
		return closedDone
	}
	return c.Context.Done()
}

// Err is the caller's error, or DeadlineExceeded once a deadline read has
// passed.
func (c *chargeCtx) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	if c.passed() {
		return context.DeadlineExceeded
	}
	return nil
}

// passed reports whether the latest deadline read has passed.
func (c *chargeCtx) passed() bool {
	d := c.deadline.Load()
	return d != 0 && time.Now().UnixNano() >= d
}

// closedDone is the Done channel of a charge whose deadline passed.
var closedDone = func() chan struct{} {
	d := make(chan struct{})
	close(d)
	return d
}()
