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
)

// How a store call to a store outside this process is bounded: the rule
// that tells load from an outage.
//
// A store that answers, however slowly, is not down. Under a burst the
// calls of a process queue for the client's connections and for the CPU,
// and a call may wait far longer than Options.Timeout while the store
// answers thousands of others. Failing such a call open would let a
// duplicate through exactly when duplicates arrive; failing it closed would
// answer a healthy burst with 503s. So a call is not ended by its own age
// but by the store's silence:
//
//   - it fails as an outage once the store has answered no call of any
//     limiter in this process for a whole Options.Timeout while it waited
//     (a stopped, hung or unreachable Redis); WhenStoreFails applies;
//   - while the store keeps answering, it waits: up to the caller's own
//     deadline, and at most loadWaits × Options.Timeout (3 s at the
//     default); past that, or when more than maxWaiting calls already wait
//     for the store, the process is saturated and the request is shed:
//     turned away with 503 and a Retry-After, counted as Shed, never let
//     through, whatever WhenStoreFails says;
//   - an error the store returns (connection refused, reset) fails at once,
//     as before.
const (
	// loadWaits is how many Options.Timeouts a call may wait for a store
	// that keeps answering other calls.
	loadWaits = 30
	// maxWaiting is how many calls may wait for one store at once before
	// new ones are shed without being sent.
	maxWaiting = 10000
	// busyQuiets is how many Options.Timeouts a store must be silent for
	// before a call counts it down in a process too busy to read replies
	// promptly (see quiet): 1 s at the default.
	busyQuiets = 10
	// lateTimer is how late a timer may fire in a process that is not
	// short of processor time.
	lateTimer = int64(2 * time.Millisecond)
)

// errSilent is the cause of a store call ended because the store answered
// nothing for a whole Options.Timeout: the outage WhenStoreFails is for.
var errSilent = errors.New("the store answered no call for the whole timeout")

// errShed is the cause of a store call ended, or never sent, because the
// process is saturated while the store answers: the request is shed.
var errShed = errors.New("the store is busy: this process has waited for it too long or with too many calls")

// isShed reports whether a store error is a shed (see errShed).
func isShed(err error) bool { return errors.Is(err, errShed) }

// liveness is what the Limiters of one store in this process know of it
// together: when it last answered a call, and how many calls wait for it.
// Shared, so that a limiter whose first call queues behind another's burst
// still sees the store answer.
type liveness struct {
	answered atomic.Int64 // monoNow of the latest call the store answered; 0: none yet
	waiting  atomic.Int64 // calls sent and not yet returned
	lateAt   atomic.Int64 // monoNow when a call's timer last fired late (see check)
}

// answer records that the store answered a call now.
func (lv *liveness) answer() {
	now := monoNow()
	// Skip the shared write while another call stamped it within the last
	// millisecond: a burst's calls would all write one cache line.
	if now-lv.answered.Load() > int64(time.Millisecond) {
		lv.answered.Store(now)
	}
}

// livenesses maps a store (by the address it points to) to its liveness,
// weakly: an entry lives as long as a limiter holds the liveness, and that
// limiter holds the store, so an address is not reused while its entry is
// alive.
var livenesses struct {
	sync.Mutex
	m map[uintptr]weak.Pointer[liveness]
}

// livenessOf returns the liveness shared by the Limiters of st. A store
// that is not a pointer (or a map, a chan…) has no identity to share it by,
// and gets one of its own.
func livenessOf(st Store) *liveness {
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
	if livenesses.m == nil {
		livenesses.m = map[uintptr]weak.Pointer[liveness]{}
	}
	for a, w := range livenesses.m { // drop the entries of stores gone
		if w.Value() == nil {
			delete(livenesses.m, a)
		}
	}
	lv := new(liveness)
	livenesses.m[addr] = weak.Make(lv)
	return lv
}

// storeCall is one bounded call to a store outside this process, and its
// context: ended by the caller or by watch's rule, applied by a timer. Its
// Done and Err are those of a context.WithCancelCause of the caller's,
// which the timer cancels. Its Deadline, which clients such as go-redis
// turn into socket deadlines and read only once they have a connection to
// send on, is a Timeout after the first time it is read (then fixed): a
// call that queued for a connection behind a burst still gets a whole
// Timeout for its reply once sent, and a silent store's reply is waited
// for no longer than that.
type storeCall struct {
	context.Context
	cancel   context.CancelCauseFunc
	lv       *liveness
	timeout  time.Duration
	start    int64 // monoNow when sent
	limit    int64 // monoNow past which a busy store's call is shed
	retry    bool  // end may answer errRetry (see callStore)
	due      int64 // monoNow when the timer is due; only check touches it
	deadline atomic.Int64
	timer    atomic.Pointer[time.Timer]
	done     atomic.Bool
}

// Deadline returns the call's deadline (see storeCall), or the caller's
// when that is sooner.
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

// watch returns the context of one call to a store outside this process,
// bounded by the rule above, and the call, whose end must be called with
// the store's error once it returned. ctx's cancellation ends it too. st
// is the store called: the limiter's, or its Fallback, whose answers say
// nothing of the store's. A store in this process (storekit.InMemory) cannot
// hang: its call is not watched, and the call returned is nil, whose end
// returns the error it is given.
func (l *limiter) watch(ctx context.Context, st Store) (context.Context, *storeCall) {
	return l.watchSince(ctx, st, monoNow(), 0)
}

// watchSince is watch for a call retried since first (see callStore),
// whose load limit counts from then: loadWaits × Options.Timeout, or
// patience when that is longer.
func (l *limiter) watchSince(ctx context.Context, st Store, first int64, patience time.Duration) (context.Context, *storeCall) {
	if l.local(st) {
		return ctx, nil // in this process: it cannot hang
	}
	lv := l.live
	if st != l.store {
		lv = l.fallbackLive
	}
	c := &storeCall{lv: lv, timeout: l.p.Timeout, start: monoNow()}
	c.Context, c.cancel = context.WithCancelCause(ctx)
	if c.lv.waiting.Add(1) > maxWaiting {
		c.cancel(errShed)
		return c, c
	}
	c.limit = first + max(loadWaits*int64(c.timeout), int64(patience))
	c.arm(c.timeout / 2)
	return c, c
}

// local reports whether st, the store or the Fallback, is in this
// process's memory.
func (l *limiter) local(st Store) bool {
	if st == l.store {
		return l.storeLocal
	}
	return l.fallbackLocal
}

// detach is watch for a call that must run even when the caller gave up
// (Release, Record): ctx's values without its cancellation.
func (l *limiter) detach(ctx context.Context, st Store) (context.Context, *storeCall) {
	if ctx.Done() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	return l.watch(ctx, st)
}

// arm starts the timer that checks the call after d.
func (c *storeCall) arm(d time.Duration) {
	c.due = monoNow() + int64(d)
	c.timer.Store(time.AfterFunc(d, c.check))
}

// check applies the rule when the timer fires: it ends the call on the
// store's silence or past the load limit, and otherwise looks again when
// the store would have been silent for a whole timeout.
func (c *storeCall) check() {
	if c.done.Load() {
		return
	}
	now := monoNow()
	timeout := int64(c.timeout)
	if now-c.due > lateTimer {
		// The timer fired late: this process did not get the processor
		// in time, and the store's answers may be waiting unread. That
		// is no evidence of silence; it makes the process busy (see
		// quiet) for a while.
		c.lv.lateAt.Store(now)
	}
	if now-c.start < timeout {
		c.arm(time.Duration(c.start + timeout - now)) // the halfway look
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

// end finishes the call that returned err: an answer (err nil) is recorded
// in the store's liveness, the timer stopped and the context released. It
// returns err, or the rule's cause (errSilent, errShed) when the rule ended
// the call.
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
		return err // refused, reset, a script error…: the store's own answer
	case !sendTimeout(err) && isSilent(c):
		return errSilent
	case c.retry && monoNow() < c.limit:
		return errRetry
	}
	// The call could not be sent in time, or its reply missed the call's
	// deadline while the store answered other calls: this process did not
	// get the processor in time. Shed, not an outage.
	return errShed
}

// sendTimeout reports whether err is a timeout of this side's own doing: a
// write or a dial that did not finish in time. A silent server still takes
// what is written (the kernel buffers it) and its kernel accepts
// connections, so only a reply that does not come is evidence of silence;
// a send that times out shows a process that did not get the processor.
func sendTimeout(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && (oe.Op == "write" || oe.Op == "dial")
}

// quiet returns for how long the store has answered no call, counted from
// the call's start at the earliest, and whether this process is too busy
// for that to be evidence: replies may be waiting unread in a process
// that does not get the processor. Before it reports a whole timeout it
// sleeps a millisecond, long enough for the Go scheduler to poll the
// network and run the readers of waiting replies, whose answers then
// count. The process is busy when that sleep overran by more than
// lateTimer, or when a call's timer fired that late within the last two
// timeouts (an idle process runs a timer within microseconds of its time).
func (c *storeCall) quiet() (quiet int64, busy bool) {
	q := monoNow() - max(c.lv.answered.Load(), c.start)
	if q < int64(c.timeout) {
		return q, false
	}
	before := monoNow()
	time.Sleep(time.Millisecond)
	after := monoNow()
	q = after - max(c.lv.answered.Load(), c.start)
	return q, after-before > lateTimer || after-c.lv.lateAt.Load() < 2*int64(c.timeout)
}

// silent reports whether the store counts as silent for the call: no
// answer for a whole timeout, or for busyQuiets timeouts in a saturated
// process (see quiet) or from a store that has not answered this process
// yet (its first calls dial their connections, which a burst at start-up
// makes slow); and for how long it has been quiet.
func (c *storeCall) silent() (bool, int64) {
	q, busy := c.quiet()
	if busy || c.lv.answered.Load() == 0 {
		return q >= busyQuiets*int64(c.timeout), q
	}
	return q >= int64(c.timeout), q
}

// isSilent is c.silent's verdict alone.
func isSilent(c *storeCall) bool {
	silent, _ := c.silent()
	return silent
}

// errRetry is end's answer to a call whose reply missed its deadline while
// the store answered others, when the caller may send it again (see
// callStore).
var errRetry = errors.New("the reply came too late: send the call again")

// callStore makes one call to st, f, under watch, and makes it again each
// time its reply missed its deadline while the store answered other calls
// (this process was too busy to read it), until the load limit: a burst
// then costs a duplicate a second round trip, not a 503. Only for calls
// that may be repeated: an acquisition (a retried grant finds the key held
// by its own token and is granted again, store.Store's retry rule), a
// quota decision (a repeated charge is the price, under a load where the
// alternative was a 503), a record read or write.
//
// patience, when longer than the load limit, is how long the call may wait
// for a store that answers: a record of a Replay response waits as long as
// its key is held, since its duplicates wait for it.
func (l *limiter) callStore(ctx context.Context, st Store, patience time.Duration, f func(context.Context) error) error {
	if l.local(st) {
		return f(ctx) // in this process: it cannot hang
	}
	first := monoNow()
	for {
		cctx, c := l.watchSince(ctx, st, first, patience)
		if c != nil {
			c.retry = true
		}
		if err := c.end(f(cctx)); err != errRetry { //nolint:errorlint // end returns errRetry itself
			return err
		}
		// A client whose connections failed may answer the next call at
		// once with the same error: pause, within the caller's context.
		select {
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
