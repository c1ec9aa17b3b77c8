package throttle

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-throttle/throttle/internal/storekit"
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
//   - an error the store returns fails at once, and a connection the client
//     could not make (refused, reset, no such host) fails the calls in
//     flight that nothing answered since (a refusedError).
//
// One monitor per store applies the rule: the calls in flight sit in its
// shards, and one goroutine, running only while there are any, looks at
// them every quarter Timeout.
const (
	loadWaits  = 30
	maxWaiting = 10000
	busyQuiets = 10
	lateTick   = int64(2 * time.Millisecond) // how late a tick comes in a process not short of CPU
	shards     = 8
)

var (
	errSilent = errors.New("the store answered no call for the whole timeout")
	errShed   = errors.New("the store is busy: this process has waited for it too long or with too many calls")
	// errRetry asks callStore to send again a call whose reply missed its
	// deadline while the store answered others.
	errRetry = errors.New("the reply came too late: send the call again")
)

// refusedError is the outage of a store whose client could not connect.
type refusedError struct{ err error }

func (e *refusedError) Error() string { return "no connection to the store: " + e.err.Error() }
func (e *refusedError) Unwrap() error { return e.err }

func isShed(err error) bool { return errors.Is(err, errShed) }

// clock is the monitor's time: monoNow stamps, and a channel that a tick
// later receives. Tests inject theirs.
type clock struct {
	now   func() int64
	after func(time.Duration) <-chan time.Time
	real  bool // now is monoNow
}

var realClock = clock{now: monoNow, after: time.After, real: true}

// monitor is what this process knows of one store's answers, shared by all
// its limiters: one whose first call queues behind another's burst still
// sees the store answer.
type monitor struct {
	clock    clock
	answered atomic.Int64            // clock.now of the tick after the latest answer; 0: none yet
	heard    atomic.Bool             // an answer came since the last tick
	lateAt   atomic.Int64            // clock.now when a tick last came late
	tick     atomic.Int64            // the period: a quarter of the shortest Timeout
	running  atomic.Bool             // the goroutine that ticks
	refused  atomic.Pointer[refusal] // the latest connection the client could not make
	shards   [shards]shard
}

// refusal is a connection the client could not make, and when.
type refusal struct {
	at  int64
	err error
}

// shard holds calls in flight, each at its slot; a call picks its shard at
// random, so that callers on different processors seldom share one.
type shard struct {
	mu    sync.Mutex
	calls []*storeCall
}

func newMonitor(c clock) *monitor {
	m := &monitor{clock: c}
	m.tick.Store(int64(time.Hour))
	return m
}

// monitorOf returns st's monitor: the one st keeps when it has a
// storekit.Liveness, else a new one (the limiter's).
func monitorOf(st store.Store) *monitor {
	lv, ok := st.(interface{ Liveness() *storekit.Liveness })
	if !ok {
		return newMonitor(realClock)
	}
	l := lv.Liveness()
	m := l.Monitor(func() any { return newMonitor(realClock) }).(*monitor)
	l.OnRefused(m.refuse)
	return m
}

// answer records an answer; the next tick dates it. The shared write is
// made once a tick, not by every call of a burst.
func (m *monitor) answer() {
	if !m.heard.Load() {
		m.heard.Store(true)
	}
}

// lastAnswer returns when the store last answered, as of now.
func (m *monitor) lastAnswer(now int64) int64 {
	if m.heard.Load() {
		return now
	}
	return m.answered.Load()
}

// refuse records a connection the client could not make; the next tick
// ends the calls sent before it unless the store answered since. Answers
// heard before it are dated just before it.
func (m *monitor) refuse(err error) {
	now := m.clock.now()
	if m.heard.Swap(false) {
		m.answered.Store(now - 1)
	}
	m.refused.Store(&refusal{at: now, err: err})
}

// waiting returns how many calls are in flight.
func (m *monitor) waiting() int {
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		n += len(s.calls)
		s.mu.Unlock()
	}
	return n
}

// add registers c, and starts the ticks when they were stopped. A call
// beyond a shard's share of maxWaiting is shed.
func (m *monitor) add(c *storeCall) {
	for t, cur := max(c.timeout/4, int64(time.Millisecond)), m.tick.Load(); t < cur; cur = m.tick.Load() {
		if m.tick.CompareAndSwap(cur, t) {
			break
		}
	}
	s := &m.shards[c.shardNo]
	c.shard = s
	s.mu.Lock()
	c.slot = len(s.calls)
	s.calls = append(s.calls, c)
	if len(s.calls) > maxWaiting/shards {
		c.cause = errShed
	}
	s.mu.Unlock()
	if !m.running.Load() && m.running.CompareAndSwap(false, true) {
		go m.run()
	}
}

// remove unregisters c.
func (m *monitor) remove(c *storeCall) {
	s := c.shard
	s.mu.Lock()
	last := s.calls[len(s.calls)-1]
	s.calls[c.slot], last.slot = last, c.slot
	s.calls[len(s.calls)-1] = nil
	s.calls = s.calls[:len(s.calls)-1]
	s.mu.Unlock()
}

// run ticks while calls are in flight.
func (m *monitor) run() {
	for {
		tick := m.tick.Load()
		due := m.clock.now() + tick
		<-m.clock.after(time.Duration(tick))
		now := m.clock.now()
		if now-due > lateTick {
			m.lateAt.Store(now) // starved of CPU: answers may wait unread
		}
		if m.check(now) == 0 {
			m.running.Store(false)
			// A call added meanwhile may have seen running still true.
			if m.waiting() == 0 || !m.running.CompareAndSwap(false, true) {
				return
			}
		}
	}
}

// check applies the rule to every call in flight at now, and returns how
// many there are.
func (m *monitor) check(now int64) (n int) {
	if m.heard.Swap(false) {
		m.answered.Store(now)
	}
	answered := m.answered.Load()
	r := m.refused.Load()
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		n += len(s.calls)
		for _, c := range s.calls {
			switch {
			case r != nil && r.at >= c.start && answered < r.at:
				c.stop(&refusedError{r.err})
			case m.silent(c, now, answered):
				if c.suspect { // on two ticks in a row: replies already waiting count
					c.stop(errSilent)
				}
				c.suspect = true
			case now >= c.limit:
				c.stop(errShed)
			default:
				c.suspect = false
			}
		}
		s.mu.Unlock()
	}
	return n
}

// silent reports whether the store counts as silent for c at now: it
// answered nothing since c was sent for a Timeout, or for busyQuiets of
// them before its first answer or while this process is starved of CPU.
func (m *monitor) silent(c *storeCall, now, answered int64) bool {
	q := now - max(answered, c.start)
	if answered == 0 || now-m.lateAt.Load() < 2*c.timeout {
		return q >= busyQuiets*c.timeout
	}
	return q >= c.timeout
}

// storeCall is the context of one call to a store outside this process,
// ended by the caller or by the monitor. Its Deadline is a Timeout after
// its first reading (go-redis reads it once it has a connection): a call
// that queued behind a burst still gets a whole Timeout for its reply. Its
// cancellation is made only when a client asks for Done. A call is never
// reused: a client may keep its context past the call (a Redlock node's
// call derives one that outlives it).
type storeCall struct {
	context.Context // the caller's
	m               *monitor
	timeout         int64
	start           int64 // clock.now when sent
	limit           int64 // clock.now past which the call is shed
	retry           bool  // end may answer errRetry
	suspect         bool  // silent at the monitor's last tick
	shard           *shard
	shardNo         uint32
	slot            int // in shard.calls
	deadline        atomic.Int64

	mu     sync.Mutex
	inner  context.Context // Done's: the caller's made cancellable
	cancel context.CancelCauseFunc
	cause  error // why the monitor ended the call
}

// Deadline returns the call's deadline, or the caller's when sooner.
func (c *storeCall) Deadline() (time.Time, bool) {
	d := c.deadline.Load()
	if d == 0 {
		d = monoNow() + c.timeout
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

// Done makes the call's cancellation on its first use.
func (c *storeCall) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inner == nil {
		c.inner, c.cancel = context.WithCancelCause(c.Context)
		if c.cause != nil {
			c.cancel(c.cause)
		}
	}
	return c.inner.Done()
}

// Err is the caller's error, or Canceled once the monitor ended the call.
func (c *storeCall) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.inner != nil:
		return c.inner.Err()
	case c.cause != nil:
		return context.Canceled
	}
	return c.Context.Err()
}

// Value looks in Done's context first: a context derived from the call
// then joins its cancellation without a goroutine.
func (c *storeCall) Value(key any) any {
	c.mu.Lock()
	inner := c.inner
	c.mu.Unlock()
	if inner != nil {
		if v := inner.Value(key); v != nil {
			return v
		}
	}
	return c.Context.Value(key)
}

// stop ends the call for cause; the monitor's shard lock is held.
func (c *storeCall) stop(cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cause == nil {
		c.cause = cause
		if c.inner != nil {
			c.cancel(cause)
		}
	}
}

// watch returns the context of a call to st retried since first, and the
// call, whose end must be given the call's error. Its load limit is
// loadWaits Timeouts from first, or patience when longer. A call to a store
// in this process cannot hang: it gets a nil *storeCall.
func (l *limiter) watch(ctx context.Context, st store.Store, first int64, patience time.Duration) (context.Context, *storeCall) {
	return l.watchFrom(ctx, st, first, first, patience)
}

// watchFrom is watch for a call sent at start.
func (l *limiter) watchFrom(ctx context.Context, st store.Store, first, start int64, patience time.Duration) (context.Context, *storeCall) {
	if l.local(st) {
		return ctx, nil
	}
	m := l.monitor(st)
	c := &storeCall{Context: ctx, m: m, timeout: int64(l.p.Timeout), start: start, shardNo: rand.Uint32() % shards} //nolint:gosec // a shard, not a secret
	c.limit = first + max(loadWaits*c.timeout, int64(patience))
	m.add(c)
	return c, c
}

// local reports whether st, the store or the Fallback, is in memory.
func (l *limiter) local(st store.Store) bool {
	if st == l.store {
		return l.storeLocal
	}
	return l.fallbackLocal
}

// monitor returns the monitor of st, the store or the Fallback.
func (l *limiter) monitor(st store.Store) *monitor {
	if st == l.store {
		return l.live
	}
	return l.fallbackLive
}

// now reads the clock of st's monitor.
func (l *limiter) now(st store.Store) int64 { return l.monitor(st).clock.now() }

// detach is watch for a call that must run even when the caller gave up
// (Release, a mirror's Record): ctx's values without its cancellation.
func (l *limiter) detach(ctx context.Context, st store.Store) (context.Context, *storeCall) {
	if ctx.Done() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	if l.local(st) {
		return ctx, nil
	}
	return l.watch(ctx, st, l.now(st), 0)
}

// end finishes the call that returned err, and returns err or the rule's
// verdict.
func (c *storeCall) end(err error) error {
	if c == nil {
		return err
	}
	m := c.m
	m.remove(c)
	if err == nil {
		m.answer()
	} else {
		err = c.verdict(err)
	}
	c.recycle()
	return err
}

// verdict applies the rule to the call's error err.
func (c *storeCall) verdict(err error) error {
	c.mu.Lock()
	cause := c.cause
	c.mu.Unlock()
	now := c.m.clock.now()
	switch {
	case cause != nil:
		return cause
	case storekit.Refusal(err):
		return &refusedError{err}
	case !isTimeout(err):
		return err // the store's own answer: a script error, a closed client
	case !sendTimeout(err):
		if c.m.silent(c, now, c.m.lastAnswer(now)) {
			return errSilent
		}
	}
	if c.retry && now < c.limit {
		return errRetry
	}
	return errShed // this process did not get the CPU to send or read in time
}

// recycle detaches the call's cancellation, if it made one, from the
// caller's context.
func (c *storeCall) recycle() {
	c.mu.Lock()
	cancel, ended := c.cancel, c.cause != nil
	c.mu.Unlock()
	if cancel != nil && !ended {
		cancel(nil)
	}
}

// sendTimeout reports whether err is a write or dial timeout: this
// process's own slowness, since a silent server's kernel still takes what
// is written and accepts connections.
func sendTimeout(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && (oe.Op == "write" || oe.Op == "dial")
}

// callStore makes the call f to st under watch, again each time its reply
// missed its deadline while the store answered others, until the load
// limit: a burst then costs a second round trip, not a 503. Only for calls
// that may be repeated (store.Store's retry rule). patience, when longer
// than the load limit, is how long the call may wait for a store that
// answers (a Replay's record waits as long as its key is held).
func (l *limiter) callStore(ctx context.Context, st store.Store, patience time.Duration, f func(context.Context) error) error {
	return l.callStoreAt(ctx, st, 0, patience, f)
}

// callStoreAt is callStore for a call sent at the monoNow stamp sent (0:
// not read yet).
func (l *limiter) callStoreAt(ctx context.Context, st store.Store, sent int64, patience time.Duration, f func(context.Context) error) error {
	if l.local(st) {
		return f(ctx)
	}
	first := sent
	if m := l.monitor(st); first == 0 || !m.clock.real {
		first = m.clock.now()
	}
	for start := first; ; start = l.now(st) {
		cctx, c := l.watchFrom(ctx, st, first, start, patience)
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
