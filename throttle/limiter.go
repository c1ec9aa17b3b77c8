package throttle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

// monoStart anchors monoNow's stamps, which are cheaper than time.Now (no
// wall clock) and fit in atomics.
var monoStart = time.Now()

func monoNow() int64 { return int64(time.Since(monoStart)) }

// monoTime returns the time.Time of the stamp t, for deadlines.
func monoTime(t int64) time.Time { return monoStart.Add(time.Duration(t)) }

// limiter is the machinery under Lock, Quota and Replay: one policy's keys
// in one store. It is safe for concurrent use.
type limiter struct {
	store    store.Store
	notifier store.Notifier
	p        policy

	// storeLocal and fallbackLocal say whether the store and the Fallback
	// are storekit.InMemory: their calls cannot hang, so nothing bounds them.
	storeLocal, fallbackLocal bool
	// processTokens says that keys are held only in this process's memory,
	// where a process counter is a unique enough token.
	processTokens bool
	leaseless     bool // Lock.Hold needs no Lease

	health             health
	logs               sync.Map // kind of log line to *logGate
	orphans            orphans
	stats              counters
	live, fallbackLive *monitor // what this process knows of the stores' answers
	name               *nameUse // the limiter's claim on its name (names.go)
}

// newLimiter returns a limiter on st under p, defaults filled in.
func newLimiter(st store.Store, p policy) (*limiter, error) {
	if st == nil {
		return nil, invalid("nil store")
	}
	p, err := p.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := servable(st, p); err != nil {
		return nil, err
	}
	use, err := claimName(st, p)
	if err != nil {
		return nil, err
	}
	l := &limiter{store: st, p: p, live: monitorOf(st), name: use}
	if p.Fallback != nil {
		l.fallbackLive = monitorOf(p.Fallback)
	}
	l.notifier, _ = st.(store.Notifier)
	_, l.storeLocal = st.(storekit.InMemory)
	_, l.fallbackLocal = p.Fallback.(storekit.InMemory)
	l.processTokens = l.storeLocal && p.WhenStoreFails != FailOver
	l.leaseless = l.processTokens && (p.Mode == Dedupe || p.Mode == Cooldown) && !p.Fence && !p.Reentrant &&
		p.Wait <= 0 && p.Observer == nil
	return l, nil
}

// minRemoteTTL is the shortest TTL of a key on a store outside this
// process: a grant is valid for its TTL less storekit.Drift, from when it
// was asked for, so a shorter one is spent on arrival.
const minRemoteTTL = 3 * time.Millisecond

// servable checks that st (and the Fallback, under FailOver) can serve p.
// A store that cannot would fail every call, and failing open would turn
// that into no limit at all: refuse the policy now instead.
func servable(st store.Store, p policy) error {
	stores := []store.Store{st}
	if p.WhenStoreFails == FailOver {
		stores = append(stores, p.Fallback)
	}
	remote := false
	for _, s := range stores {
		_, local := s.(storekit.InMemory)
		remote = remote || !local
	}
	if remote && p.Mode != ModeQuota && p.TTL < minRemoteTTL {
		return invalid("policy %q: window %v is shorter than %v, the least a key on a store outside this process can be held for "+
			"(a grant is valid for its TTL less a clock-drift allowance of 2ms and 1%%, from when it was asked for)", p.Name, p.TTL, minRemoteTTL)
	}
	for i, s := range stores {
		name := [...]string{"the store", "the Fallback"}[i]
		if r, ok := s.(interface{ Refuses(store.Request) error }); ok { // Redlock
			req := store.Request{Key: storekit.Key(p.Prefix, p.Name, "check"), Token: "check", TTL: p.TTL,
				Fence: p.Fence, Reentrant: p.Reentrant, Holders: p.Holders}
			if err := r.Refuses(req); err != nil {
				return fmt.Errorf("policy %q: %w", p.Name, err) // err matches store.ErrInvalid
			}
		}
		_, quotas := s.(store.Quota)
		_, records := s.(store.Recorder)
		switch {
		case p.Mode == ModeQuota && !quotas:
			return invalid("policy %q: a Quota policy needs stores that keep quotas: %s, a %T, does not implement store.Quota", p.Name, name, s)
		case p.Mode == ModeReplay && !records:
			return invalid("policy %q: a Replay policy needs stores that keep records: %s, a %T, does not implement store.Recorder", p.Name, name, s)
		}
	}
	return nil
}

// key returns the key of id: a lock's, a Replay's, or a Quota's under its
// own rate (storekit.AppendJobKey).
func (l *limiter) key(id string) string {
	var buf [keyTokenBuf]byte
	return string(l.appendKey(buf[:0], id, l.p.Name))
}

// appendKey appends key(id) to b, under the rate named rate for a Quota.
func (l *limiter) appendKey(b []byte, id, rate string) []byte {
	job := storekit.LockJob
	switch l.p.Mode {
	case ModeQuota:
		job = storekit.QuotaJob
	case ModeReplay:
		job = storekit.ReplayJob
	}
	return storekit.AppendJobKey(b, job, l.p.Prefix, l.p.Name, id, rate)
}

// keyTokenBuf is request's stack buffer size; a longer key and token go to the heap.
const keyTokenBuf = 160

// request returns the store request that takes the key for id for ttl,
// with a new token (or, under Reentrant, the owner ctx carries). The key
// and the token share one string: one allocation per acquisition.
func (l *limiter) request(ctx context.Context, id string, ttl time.Duration) store.Request {
	req := store.Request{TTL: ttl, Fence: l.p.Fence, Reentrant: l.p.Reentrant, Holders: l.p.Holders}
	if req.Reentrant {
		req.Token = ownerFrom(ctx)
	}
	var buf [keyTokenBuf]byte
	b := l.appendKey(buf[:0], id, "")
	n := len(b)
	switch {
	case req.Token != "":
	case l.processTokens:
		b = storekit.AppendCounter(b, localTokens.Add(1))
	default:
		b = storekit.AppendToken(b)
	}
	kt := string(b)
	req.Key = kt[:n]
	if req.Token == "" {
		req.Token = kt[n:]
	}
	return req
}

// localTokens numbers the tokens of keys held only in this process.
var localTokens atomic.Uint64

// acquire is Lock.Acquire for ttl.
func (l *limiter) acquire(ctx context.Context, id string, ttl time.Duration) (*Lease, error) {
	req := l.request(ctx, id, ttl)
	// An in-memory grant is dated when granted, and a refusal needs no
	// clock: read it only when something uses it.
	var sent int64
	if !l.processTokens || l.p.Wait > 0 || l.p.Observer != nil {
		sent = monoNow()
	}
	lease, remaining, err := l.try(ctx, req, sent)
	if lease != nil || err != nil {
		return lease, err
	}
	if l.p.Wait <= 0 {
		return nil, &ContendedError{RetryAfter: remaining}
	}
	lease, _, err = l.wait(ctx, req, remaining, monoTime(sent).Add(l.p.Wait), nil)
	return lease, err
}

// wait retries a held key with backoff until it is taken, deadline passes
// or ctx ends; a Notifier's release wakes it early. With look (Claim), a
// try that finds the key held also looks for its record, which ends the wait.
func (l *limiter) wait(ctx context.Context, req store.Request, remaining time.Duration, deadline time.Time, look func(context.Context) ([]byte, error)) (*Lease, []byte, error) {
	wake, stop := l.watchKey(ctx, req.Key, deadline)
	defer stop()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for attempt := 0; ; attempt++ {
		// With a watch, look again at once: the holder may have let go
		// between the first try and the watch.
		if attempt > 0 || wake != nil {
			// The release that woke the wait may be told before Redis
			// invalidates this process's remembered refusal of the key.
			if n, ok := l.store.(storekit.Near); ok {
				n.Forget(req.Key)
			}
			lease, rem, err := l.try(ctx, req, monoNow())
			var rec []byte
			if lease == nil && err == nil && look != nil {
				rec, err = look(ctx)
			}
			if lease != nil || rec != nil || err != nil {
				return lease, rec, err
			}
			remaining = rem
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, nil, &ContendedError{RetryAfter: remaining}
		}
		timer.Reset(min(l.p.Backoff(attempt+1), left))
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-wake:
		case <-timer.C:
		}
	}
}

// watchKey returns the channel a Notifier store wakes on key's release or
// record, or nil (the store cannot tell, or its watch failed: wait polls).
func (l *limiter) watchKey(ctx context.Context, key string, deadline time.Time) (<-chan struct{}, func()) {
	if l.notifier == nil {
		return nil, func() {}
	}
	if t := time.Now().Add(l.p.Timeout); t.Before(deadline) {
		deadline = t
	}
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	w, stop, err := l.notifier.Watch(wctx, key)
	if err != nil {
		return nil, func() {}
	}
	return w, stop
}

// try makes one acquisition sent at sent (a monoNow stamp, or 0 when
// acquire did not read the clock).
func (l *limiter) try(ctx context.Context, req store.Request, sent int64) (*Lease, time.Duration, error) {
	if l.p.WhenStoreFails == FailOver {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		return l.tryFailOver(ctx, req, sent)
	}
	g, err := l.ask(ctx, req, sent)
	if err != nil {
		return nil, 0, err
	}
	return l.granted(ctx, false, nil, req, g, sent)
}

// ask makes one acquisition in the store (not under FailOver).
func (l *limiter) ask(ctx context.Context, req store.Request, sent int64) (store.Grant, error) {
	if err := ctx.Err(); err != nil {
		return store.Grant{}, err
	}
	if n, ok := l.store.(storekit.Near); ok { // a remembered refusal: no call to bound
		if g, ok := n.Refused(req); ok {
			l.nearHit(ctx)
			return g, nil
		}
	}
	var g store.Grant
	var err error
	if l.storeLocal && l.p.Observer == nil {
		g, err = l.store.Acquire(ctx, req) // nothing to bound or time
	} else {
		g, err = l.call(ctx, l.store, req, sent)
	}
	if err != nil {
		if sent == 0 {
			sent = monoNow()
		}
		return g, l.failed(ctx, l.store, req, sent, err)
	}
	l.health.answered(l)
	return g, nil
}

// failed handles an acquisition st did not answer. The command may have
// taken the key with req's token all the same: the key is released in the
// background once the store answers.
func (l *limiter) failed(ctx context.Context, st store.Store, req store.Request, sent int64, err error) error {
	l.releaseLater(ctx, st, req, sent, err)
	return l.storeErr(ctx, st, "acquire", err)
}

// storeErr returns ctx's error when it ended, else counts err, a failed
// call of op to st, and returns it as a store error.
func (l *limiter) storeErr(ctx context.Context, st store.Store, op string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	l.countFailure(st, op, err)
	return &storeError{op: op, err: err}
}

// countFailure counts and logs a store error of op, and records it in the
// store's health. A shed call is no store error: the store answers.
func (l *limiter) countFailure(st store.Store, op string, err error) {
	if isFull(err) {
		l.logLimited(slog.LevelWarn, "full", "throttle: request refused: the store is full or busy (no room for a new key, or a Redlock split vote)",
			"op", op, "err", err)
		return
	}
	if isShed(err) {
		l.logLimited(slog.LevelWarn, "shed", "throttle: request shed: this process waited too long for a store that answers, or with too many calls",
			"op", op, "waiting", l.live.waiting())
		return
	}
	l.stats.storeErrors.Add(1)
	if st == l.store {
		l.health.failed(l)
	}
	l.logStoreError(op, err)
}

// granted turns a store's answer into a lease, or the holder's remaining
// time. fallback says the answer is the Fallback's; mirror is the Fallback
// when it mirrors the store's grant. A remote grant whose validity was spent
// on the way (work on it could run beside the next holder) is released in
// the background and reported as a store failure.
func (l *limiter) granted(ctx context.Context, fallback bool, mirror store.Store, req store.Request, g store.Grant, sent int64) (*Lease, time.Duration, error) {
	if !g.Acquired {
		l.stats.rejected.Add(1)
		return nil, g.Remaining, nil
	}
	if sent == 0 {
		sent = monoNow()
	}
	lease := newLease(l, fallback, req, g, sent)
	lease.mirrored = mirror != nil
	if !l.local(lease.holder()) && lease.ValidFor() <= 0 {
		l.releaseLater(ctx, lease.holder(), req, sent, errLate)
		if mirror != nil {
			l.releaseLater(ctx, mirror, req, sent, errLate)
		}
		l.stats.storeErrors.Add(1)
		return nil, 0, &storeError{op: "acquire", err: errLate}
	}
	l.stats.acquired.Add(1)
	return lease, 0, nil
}

// errLate is the cause of a store error for a grant that came too late.
var errLate = errors.New("the grant arrived after its validity ran out")

// call makes one acquisition in st, the store or the Fallback, bounded by
// callStore; the store's own calls are timed for the Observer.
func (l *limiter) call(ctx context.Context, st store.Store, req store.Request, sent int64) (store.Grant, error) {
	var g store.Grant
	err := l.callStoreAt(ctx, st, sent, 0, func(ctx context.Context) (err error) {
		g, err = st.Acquire(ctx, req)
		return err
	})
	if st == l.store {
		l.storeCall(ctx, "acquire", sent, callFailed(ctx, err))
	}
	return g, err
}

// admitted applies the policy to the outcome err of an admission of cost,
// tells the Observer, and returns Admit's error: err, or nil when a store
// error fails open.
func (l *limiter) admitted(ctx context.Context, fallback bool, cost int, err error) error {
	if err != nil && isStoreError(err) {
		return l.storeFailed(ctx, err)
	}
	if l.p.Observer == nil && !l.p.DryRun {
		return err
	}
	var ce *ContendedError
	switch {
	case err == nil && fallback:
		l.observe(ctx, Event{Kind: "fallback", Cost: cost})
	case err == nil:
		l.observe(ctx, Event{Kind: "admitted", Cost: cost})
	case !errors.As(err, &ce): // the caller's context: no outcome
	case l.p.DryRun:
		l.logLimited(slog.LevelInfo, "dry run", "throttle: dry run: a request that would have been turned away went ahead",
			"mode", l.p.Mode.String(), "retry_after", ce.RetryAfter)
		l.observe(ctx, Event{Kind: "dry_run_rejected", RetryAfter: ce.RetryAfter})
	default:
		l.observe(ctx, Event{Kind: "rejected", RetryAfter: ce.RetryAfter})
	}
	return err
}

// storeFailed applies the policy to a store error of an admission. A shed
// request, or one a full store had no room for, is turned away whatever
// WhenStoreFails says: its store answers, and letting it through would
// admit a burst's duplicates.
func (l *limiter) storeFailed(ctx context.Context, err error) error {
	switch {
	case isShed(err):
		l.stats.shed.Add(1)
		l.observe(ctx, Event{Kind: "shed"})
		return err
	case isFull(err):
		l.stats.full.Add(1)
		l.observe(ctx, Event{Kind: "full"})
		return err
	case l.p.WhenStoreFails == FailOpen:
		l.stats.failedOpen.Add(1)
		l.observe(ctx, Event{Kind: "failed_open"})
		return nil
	}
	l.observe(ctx, Event{Kind: "failed_closed"})
	return err
}

// isFull reports a store that answered but could not take the request now
// (store.ErrBusy: full, or a Redlock split vote): load, not an outage. Like
// a shed call, the request is turned away whatever WhenStoreFails says and
// the store's health is untouched: letting it through would let a flood of
// distinct clients through unguarded, or a duplicate.
func isFull(err error) bool { return errors.Is(err, store.ErrBusy) }

// isStoreError is errors.Is(err, ErrStore) without reflection for the
// acquisition path's own errors: a rejection is a hot key's common case.
func isStoreError(err error) bool {
	switch err.(type) {
	case *ContendedError:
		return false
	case *storeError:
		return true
	}
	return errors.Is(err, ErrStore)
}
