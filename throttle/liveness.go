package throttle

import (
	"context"
	"errors"
	"net"
	"os"
	"reflect"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/go-throttle/throttle/throttle/store"
)

// Load is not an outage. Under a burst a process's calls queue for the
// client's connections and for the CPU far longer than Options.Timeout
// while the store answers others; failing them open would let duplicates
// through exactly when they arrive. So a call to a store outside this
// process is ended by the store's silence, not by its own age:
//
//   - it fails as an outage (errSilent) once the store has answered no call
//     of this process for a whole Timeout (busyQuiets Timeouts before the
//     store's first answer, or while this process is starved of CPU);
//   - while the store answers, it waits up to loadWaits Timeouts; past
//     that, or with more than maxWaiting calls waiting, it is shed
//     (errShed): turned away with 503, never let through;
//   - an error the store returns (refused, reset) fails at once.
const (
	loadWaits  = 30
	maxWaiting = 10000
	busyQuiets = 10
	lateTimer  = int64(2 * time.Millisecond) // how late a timer fires in a process not short of CPU
)

var (
	errSilent = errors.New("the store answered no call for the whole timeout")
	errShed   = errors.New("the store is busy: this process has waited for it too long or with too many calls")
	// errRetry asks callStore to send again a call whose reply missed its
	// deadline while the store answered others.
	errRetry = errors.New("the reply came too late: send the call again")
)

func isShed(err error) bool { return errors.Is(err, errShed) }

// liveness is what this process knows of one store, shared by all its
// limiters: one whose first call queues behind another's burst still sees
// the store answer.
type liveness struct {
	answered atomic.Int64 // monoNow of the latest answer; 0: none yet
	waiting  atomic.Int64 // calls sent and not returned
	lateAt   atomic.Int64 // monoNow when a call's timer last fired late
}

// answer records an answer now, skipping the shared write within a
// millisecond of the last one, which a burst's calls would contend on.
func (lv *liveness) answer() {
	if now := monoNow(); now-lv.answered.Load() > int64(time.Millisecond) {
		lv.answered.Store(now)
	}
}

// livenesses maps a store's address to its liveness, weakly: the limiter
// that holds the liveness holds the store, so a live entry's address is
// not reused.
var livenesses = struct {
	sync.Mutex
	m map[uintptr]weak.Pointer[liveness]
}{m: map[uintptr]weak.Pointer[liveness]{}}

// livenessOf returns the liveness of st; a store that is not a pointer gets
// its own.
func livenessOf(st store.Store) *liveness {
	v := reflect.ValueOf(st)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer:
	default:
		return new(liveness)
	}
	addr := v.Pointer()
	livenesses.Lock()
	defer livenesses.Unlock()
	if lv := livenesses.m[addr].Value(); lv != nil {
		return lv
	}
	for a, w := range livenesses.m {
		if w.Value() == nil {
			delete(livenesses.m, a)
		}
	}
	lv := new(liveness)
	livenesses.m[addr] = weak.Make(lv)
	return lv
}

// storeCall is the context of one call to a store outside this process,
// cancelled by the caller or by a timer that applies the rule above. Its
// Deadline is a Timeout after its first reading (go-redis reads it once it
// has a connection): a call that queued behind a burst still gets a whole
// Timeout for its reply.
type storeCall struct {
	context.Context
	cancel   context.CancelCauseFunc
	lv       *liveness
	timeout  time.Duration
	start    int64 // monoNow when sent
	limit    int64 // monoNow past which the call is shed
	retry    bool  // end may answer errRetry
	due      int64 // monoNow when the timer is due
	deadline atomic.Int64
	timer    atomic.Pointer[time.Timer]
	done     atomic.Bool
}

// Deadline returns the call's deadline, or the caller's when sooner.
func (c *storeCall) Deadline() (time.Time, bool) {
	d := c.deadline.Load()
	if d == 0 {
		d = monoNow() + int64(c.timeout)
		if !c.deadline.CompareAndSwap(0, d) {
			d = c.deadline.Load()
		}
	}
	t := monoTime(d)
	if pd, ok := c.Context.Deadline(); ok && pd.Before(t) {
		return pd, true
	}
	return t, true
}

// watch returns the context of a call to st retried since first, and the
// call, whose end must be given the call's error. Its load limit is
// loadWaits Timeouts from first, or patience when longer. A call to a store
// in this process cannot hang: it gets a nil *storeCall.
func (l *limiter) watch(ctx context.Context, st store.Store, first int64, patience time.Duration) (context.Context, *storeCall) {
	if l.local(st) {
		return ctx, nil
	}
	lv := l.live
	if st != l.store {
		lv = l.fallbackLive
	}
	c := &storeCall{lv: lv, timeout: l.p.Timeout, start: monoNow()}
	c.Context, c.cancel = context.WithCancelCause(ctx)
	if lv.waiting.Add(1) > maxWaiting {
		c.cancel(errShed)
		return c, c
	}
	c.limit = first + max(loadWaits*int64(c.timeout), int64(patience))
	c.arm(c.timeout / 2)
	return c, c
}

// local reports whether st, the store or the Fallback, is in memory.
func (l *limiter) local(st store.Store) bool {
	if st == l.store {
		return l.storeLocal
	}
	return l.fallbackLocal
}

// detach is watch for a call that must run even when the caller gave up
// (Release, a mirror's Record): ctx's values without its cancellation.
func (l *limiter) detach(ctx context.Context, st store.Store) (context.Context, *storeCall) {
	if ctx.Done() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	return l.watch(ctx, st, monoNow(), 0)
}

func (c *storeCall) arm(d time.Duration) {
	c.due = monoNow() + int64(d)
	c.timer.Store(time.AfterFunc(d, c.check))
}

// check applies the rule when the timer fires, and otherwise looks again
// when the store would have been silent for a whole Timeout.
func (c *storeCall) check() {
	if c.done.Load() {
		return
	}
	now := monoNow()
	timeout := int64(c.timeout)
	if now-c.due > lateTimer {
		c.lv.lateAt.Store(now) // starved of CPU: answers may wait unread
	}
	if now-c.start < timeout {
		c.arm(time.Duration(c.start + timeout - now))
		return
	}
	switch silent, quiet := c.silent(); {
	case silent:
		c.cancel(errSilent)
	case now >= c.limit:
		c.cancel(errShed)
	case quiet >= timeout: // a saturated process: look again soon
		c.arm(time.Duration(min(timeout, c.limit-now)))
	default:
		c.arm(time.Duration(min(timeout-quiet, c.limit-now)))
	}
}

// end finishes the call that returned err, and returns err or the rule's
// verdict.
func (c *storeCall) end(err error) error {
	if c == nil {
		return err
	}
	c.done.Store(true)
	if t := c.timer.Load(); t != nil {
		t.Stop()
	}
	c.lv.waiting.Add(-1)
	if err == nil {
		c.lv.answer()
		c.cancel(nil)
		return nil
	}
	cause := context.Cause(c.Context)
	c.cancel(nil)
	switch {
	case errors.Is(cause, errSilent) || errors.Is(cause, errShed):
		return cause
	case !isTimeout(err):
		return err // the store's own answer: refused, reset, a script error
	case !sendTimeout(err):
		if silent, _ := c.silent(); silent {
			return errSilent
		}
	}
	if c.retry && monoNow() < c.limit {
		return errRetry
	}
	return errShed // this process did not get the CPU to send or read in time
}

// sendTimeout reports whether err is a write or dial timeout: this
// process's own slowness, since a silent server's kernel still takes what
// is written and accepts connections.
func sendTimeout(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && (oe.Op == "write" || oe.Op == "dial")
}

// silent reports whether the store counts as silent for the call, and for
// how long it has answered nothing since the call's start. Before it
// reports a whole Timeout it sleeps a millisecond, so that replies already
// waiting count. The process is busy when that sleep overran by lateTimer,
// or a timer fired that late within two Timeouts; then, or before the
// store's first answer, silence must last busyQuiets Timeouts.
func (c *storeCall) silent() (bool, int64) {
	timeout := int64(c.timeout)
	q := monoNow() - max(c.lv.answered.Load(), c.start)
	if q < timeout {
		return false, q
	}
	before := monoNow()
	time.Sleep(time.Millisecond)
	after := monoNow()
	q = after - max(c.lv.answered.Load(), c.start)
	if after-before > lateTimer || after-c.lv.lateAt.Load() < 2*timeout || c.lv.answered.Load() == 0 {
		return q >= busyQuiets*timeout, q
	}
	return q >= timeout, q
}

// callStore makes the call f to st under watch, again each time its reply
// missed its deadline while the store answered others, until the load
// limit: a burst then costs a second round trip, not a 503. Only for calls
// that may be repeated (store.Store's retry rule). patience, when longer
// than the load limit, is how long the call may wait for a store that
// answers (a Replay's record waits as long as its key is held).
func (l *limiter) callStore(ctx context.Context, st store.Store, patience time.Duration, f func(context.Context) error) error {
	if l.local(st) {
		return f(ctx)
	}
	first := monoNow()
	for {
		cctx, c := l.watch(ctx, st, first, patience)
		c.retry = true
		if err := c.end(f(cctx)); err != errRetry { //nolint:errorlint // end returns errRetry itself
			return err
		}
		select { // a client whose connections failed may fail the next call at once
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(l.p.Timeout / 10):
		}
	}
}

// isTimeout reports whether err is a deadline that passed (the context's,
// or a socket's that a client set from it).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout())
}
