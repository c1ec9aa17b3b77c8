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
// them every quarter Timeout. A call from a context that cannot be
// cancelled (context.Background, or a Release, which runs whatever its
// caller does) joins the calls sent within a Timeout/shareWidth before it
// in its shard: one storeCall and one Done channel for a burst, not one per
// call. The rule then judges them together: silence from the last one's
// sending, the load limit from the first one's, a refusal after the first
// one's. A call from a cancellable context is its own, and ends at the
// first tick after its caller's cancellation: joining the caller's context
// would cost the call three allocations more.
const (
	loadWaits  = 30
	maxWaiting = 10000
	busyQuiets = 10
	lateTick   = int64(2 * time.Millisecond) // how late a tick comes in a process not short of CPU
	shards     = 8
	shareWidth = 8 // a shared call takes joiners for a Timeout/shareWidth
)

var (
	errSilent = errors.New("the store answered no call for the whole timeout: stopped, hung or unreachable")
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
// later receives. Tests inject theirs; a monitor on a clock not real reads
// no run queue (see run), so that only their ticks say it is starved.
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
	runq     *runQueue               // the run queue's waits, read by the ticks; nil: not judged (a test's clock)
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
	n     int        // callers in flight: a shared call counts each
	open  *storeCall // the shared call that calls from context.Background join
}

func newMonitor(c clock) *monitor {
	m := &monitor{clock: c}
	m.tick.Store(int64(time.Hour))
	if c.real {
		m.runq = newRunQueue()
	}
	return m
}

// monitorOf returns st's monitor: the one st keeps when it has a
// storekit.Liveness, else a new one (the limiter's).
func monitorOf(st store.Store) *monitor {
	lv, ok := st.(interface{ Liveness() *storekit.Liveness })
	if !ok {
		return newMonitor(realClock)
	}
	return lv.Liveness().Monitor(func() storekit.Monitor { return newMonitor(realClock) }).(*monitor)
}

// Answered records an answer; the next tick dates it. The shared write is
// made once a tick, not by every call of a burst.
func (m *monitor) Answered() {
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

// Refused records a connection the client could not make; the next tick
// ends the calls sent before it unless the store answered since. Answers
// heard before it are dated just before it.
func (m *monitor) Refused(err error) {
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
		n += s.n
		s.mu.Unlock()
	}
	return n
}

// tickAtMost lowers the tick to t when it is longer.
func (m *monitor) tickAtMost(t int64) {
	for cur := m.tick.Load(); t < cur; cur = m.tick.Load() {
		if m.tick.CompareAndSwap(cur, t) {
			return
		}
	}
}

// add registers a call under ctx sent at start, shed past limit, and
// starts the ticks when they were stopped. share lets a call that ctx
// cannot cancel (detached: whatever ctx does) join its shard's open shared
// call (see view). A call beyond a shard's share of maxWaiting is shed.
func (m *monitor) add(ctx context.Context, detached bool, timeout, start, limit int64, share bool) *storeCall {
	m.tickAtMost(max(timeout/4, int64(time.Millisecond)))
	s := &m.shards[rand.Uint32()%shards] //nolint:gosec // a shard, not a secret
	s.mu.Lock()
	full := s.n >= maxWaiting/shards
	share = share && !full && (detached || ctx.Done() == nil)
	c := s.open
	if share && c != nil && c.cause == nil && c.timeout == timeout && start-c.start < timeout/shareWidth {
		c.start, c.last = min(c.start, start), max(c.last, start)
	} else {
		c = &storeCall{Context: ctx, m: m, timeout: timeout, start: start, last: start, limit: limit, shard: s,
			shared: share}
		if share {
			c.Context, s.open = context.Background(), c
		} else if detached {
			c.Context = withoutCancel(ctx)
		}
	}
	if c.callers == 0 {
		c.slot = len(s.calls)
		s.calls = append(s.calls, c)
	}
	c.callers++
	s.n++
	if full {
		c.stop(errShed)
	}
	s.mu.Unlock()
	if !m.running.Load() && m.running.CompareAndSwap(false, true) {
		go m.run()
	}
	return c
}

// withoutCancel is ctx's values without its cancellation.
func withoutCancel(ctx context.Context) context.Context {
	if ctx.Done() == nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}

// remove unregisters a caller of c, and returns c.last and why the monitor
// ended c (nil: it did not).
func (m *monitor) remove(c *storeCall) (last int64, cause error) {
	s := c.shard
	s.mu.Lock()
	last, cause = c.last, c.cause
	s.n--
	if c.callers--; c.callers == 0 {
		last := s.calls[len(s.calls)-1]
		s.calls[c.slot], last.slot = last, c.slot
		s.calls[len(s.calls)-1] = nil
		s.calls = s.calls[:len(s.calls)-1]
	}
	s.mu.Unlock()
	return last, cause
}

// run ticks while calls are in flight. The process counts as starved of
// CPU (answers may wait unread) when a tick comes late, or when a goroutine
// waited in the run queue for a whole tick (a quarter of the shortest
// Timeout) since the last one: a goroutine woken by its timer runs next on
// its processor, so the ticks may come on time while the goroutines that
// send calls and read replies wait behind others. A tick's wait is far past
// what a process that has the CPU for its load shows (a tick of its own
// comes within lateTick), yet short of the Timeout that a healthy store's
// answers must sit unread to be taken for silence: the runtime records a
// wait only once the goroutine runs, so the waits that cost a Timeout show
// first as shorter ones.
func (m *monitor) run() {
	if m.runq != nil {
		m.runq.restart() // waits while no call was in flight delay no verdict
	}
	for {
		tick := m.tick.Load()
		due := m.clock.now() + tick
		<-m.clock.after(time.Duration(tick))
		now := m.clock.now()
		queued := m.runq != nil && m.runq.waited(time.Duration(tick))
		if now-due > lateTick || queued {
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
		n += s.n
		for _, c := range s.calls {
			switch {
			case c.Context.Err() != nil: // the caller's cancellation
				c.stop(c.Context.Err())
			case r != nil && r.at >= c.start && answered < r.at:
				c.stop(&refusedError{r.err})
			case m.silent(c.timeout, c.last, now, answered):
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

// silent reports whether the store counts as silent at now for a call sent
// (by its last caller) at last: it answered nothing since for a timeout, or
// for busyQuiets of them before its first answer or while this process is
// starved of CPU.
func (m *monitor) silent(timeout, last, now, answered int64) bool {
	q := now - max(answered, last)
	if answered == 0 || now-m.lateAt.Load() < 2*timeout {
		return q >= busyQuiets*timeout
	}
	return q >= timeout
}

// storeCall is a call to a store outside this process (or calls sent
// together from contexts they cannot be cancelled by, which share it) as
// its monitor judges it, and the context its client gets: the caller's
// (context.Background for a shared call, whose callers each get a
// sharedCall with their values), with a Done channel of its own that the
// monitor closes (made when a client first asks for it). Its Deadline is a
// Timeout after each reading (go-redis reads it once it has a connection):
// a call that queued behind a burst still gets a whole Timeout for its
// reply. Nothing in it is ever reset: a client may keep its context past
// the call (a Redlock node's call derives one that outlives it).
type storeCall struct {
	context.Context // the caller's, or context.Background when shared
	m               *monitor
	timeout         int64
	done            atomic.Value // chan struct{}: Done's, or ended once the monitor ended the call
	shared          bool         // calls may join it (see view)

	// The monitor's, under shard.mu:
	start   int64 // clock.now when the first caller sent it
	last    int64 // clock.now when the last caller sent it
	limit   int64 // clock.now past which the call is shed
	suspect bool  // silent at the monitor's last tick
	shard   *shard
	slot    int   // in shard.calls
	callers int   // in flight
	cause   error // why the monitor ended the call
}

// Deadline returns a Timeout from now, or the caller's deadline when sooner.
func (c *storeCall) Deadline() (time.Time, bool) {
	t := monoTime(monoNow() + c.timeout)
	if pd, ok := c.Context.Deadline(); ok && pd.Before(t) {
		return pd, true
	}
	return t, true
}

// Done returns the channel the monitor closes when it ends the call, made
// by its first call: a client that never waits (rueidis sending alone on
// an idle connection) costs no channel.
func (c *storeCall) Done() <-chan struct{} {
	if d, ok := c.done.Load().(chan struct{}); ok {
		return d
	}
	if d := make(chan struct{}); c.done.CompareAndSwap(nil, d) {
		return d
	}
	return c.done.Load().(chan struct{})
}

// Err is nil until the monitor ended the call, then the caller's error
// when the caller's cancellation ended it, else Canceled.
func (c *storeCall) Err() error {
	if d, _ := c.done.Load().(chan struct{}); d != ended {
		return nil
	}
	if err := c.Context.Err(); err != nil {
		return err
	}
	return context.Canceled
}

// ended is the Done channel of every call the monitor ended.
var ended = func() chan struct{} {
	d := make(chan struct{})
	close(d)
	return d
}()

// stop ends the call for cause; the monitor's shard lock is held.
func (c *storeCall) stop(cause error) {
	if c.cause == nil {
		c.cause = cause
		if d := c.done.Swap(ended); d != nil {
			close(d.(chan struct{}))
		}
	}
}

// sharedCall is a shared call as one of its callers sees it: with the
// values of that caller's context.
type sharedCall struct {
	*storeCall
	values context.Context
}

// Value looks in the caller's context.
func (c *sharedCall) Value(key any) any { return c.values.Value(key) }

// view returns the context of c for a caller under ctx: c itself, unless c
// is shared and ctx may carry values; then *v (nil: a new sharedCall), set
// to c with ctx's values.
func (c *storeCall) view(ctx context.Context, v *sharedCall) context.Context {
	if !c.shared || ctx == context.Background() {
		return c
	}
	if v == nil {
		v = new(sharedCall)
	}
	*v = sharedCall{c, ctx}
	return v
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
	t := int64(l.p.Timeout)
	c := l.monitor(st).add(ctx, false, t, start, first+max(loadWaits*t, int64(patience)), first == start && patience == 0)
	return c.view(ctx, nil), c
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

// detach is watch for a call that must run even when the caller gave up
// (Release, a mirror's Record): ctx's values without its cancellation. v,
// when not nil, is where the call's view is kept (see storeCall.view): a
// Lease's, for its one Release.
func (l *limiter) detach(ctx context.Context, st store.Store, v *sharedCall) (context.Context, *storeCall) {
	if !l.local(st) {
		m, t := l.monitor(st), int64(l.p.Timeout)
		now := m.clock.now()
		c := m.add(ctx, true, t, now, now+loadWaits*t, true)
		return c.view(ctx, v), c
	}
	return withoutCancel(ctx), nil
}

// end finishes the call that returned err, and returns err or the rule's
// verdict.
func (c *storeCall) end(err error) error { return c.finish(err, false) }

// finish is end for a call that may be sent again (retry: it may answer
// errRetry).
func (c *storeCall) finish(err error, retry bool) error {
	if c == nil {
		return err
	}
	last, cause := c.m.remove(c)
	if err == nil {
		c.m.Answered()
		return nil
	}
	return c.verdict(err, cause, last, retry)
}

// verdict applies the rule to the error err of a call sent at last, which
// the monitor ended for cause (nil: it did not).
func (c *storeCall) verdict(err, cause error, last int64, retry bool) error {
	now := c.m.clock.now()
	switch {
	case cause != nil:
		return cause
	case storekit.Refusal(err):
		return &refusedError{err}
	case !isTimeout(err):
		return err // the store's own answer: a script error, a closed client
	case !sendTimeout(err):
		if c.m.silent(c.timeout, last, now, c.m.lastAnswer(now)) {
			return errSilent
		}
	}
	if retry && now < c.limit {
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
	return l.callStoreOf(ctx, st, sent, patience, true, f)
}

// callCharge is callStore for a quota decision of cost. A charge or a
// refund (cost not 0) sent again after the store ran it counts twice, and
// a reply that came too late does not say whether it ran: such a call is
// shed (503, as one that waited too long), not sent again. It is sent
// again only when its send timed out (a command not wholly written never
// runs). A peek is callStore's.
func (l *limiter) callCharge(ctx context.Context, st store.Store, cost int, f func(context.Context) error) error {
	return l.callStoreOf(ctx, st, 0, 0, cost == 0, f)
}

// callStoreOf is callStoreAt; late says whether a call whose reply came
// too late may be sent again.
func (l *limiter) callStoreOf(ctx context.Context, st store.Store, sent int64, patience time.Duration, late bool,
	f func(context.Context) error) error {
	if l.local(st) {
		return f(ctx)
	}
	m := l.monitor(st)
	first := sent
	if first == 0 || !m.clock.real {
		first = m.clock.now()
	}
	for start := first; ; start = m.clock.now() {
		cctx, c := l.watchFrom(ctx, st, first, start, patience)
		err := f(cctx)
		if err = c.finish(err, late || sendTimeout(err)); err != errRetry { //nolint:errorlint // end returns errRetry itself
			return err
		}
		// Silence counts from the first send: a store that answered
		// nothing since is an outage, whatever the retries restarted.
		if now := m.clock.now(); m.silent(int64(l.p.Timeout), first, now, m.lastAnswer(now)) {
			return errSilent
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
