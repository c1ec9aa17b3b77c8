package throttle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/internal/seq"
	"github.com/go-throttle/throttle/throttle/store"
)

// monoStart anchors monotonic time stamps: nanoseconds since monoStart, as
// monoNow returns them. The acquisition path stamps with them rather than
// with time.Now, which also reads the wall clock and costs about twice as
// much; they fit in atomics too.
var monoStart = time.Now()

func monoNow() int64 { return int64(time.Since(monoStart)) }

// monoTime returns the time.Time of the monotonic stamp t, for the few
// places that need one (deadlines); it keeps its monotonic reading.
func monoTime(t int64) time.Time { return monoStart.Add(time.Duration(t)) }

// limiter takes keys in a Store under one Policy. It is safe for concurrent
// use; make one per policy at start-up and share it.
type limiter struct {
	store    Store
	notifier store.Notifier
	quota    store.Quota    // the store, for a Quota policy
	recorder store.Recorder // the store, for a Replay policy
	p        policy

	// storeLocal and fallbackLocal say whether the store and the Fallback
	// are storekit.InMemory (asked once in New, not with a type assertion per
	// call): calls to them need no Options.Timeout bound.
	storeLocal, fallbackLocal bool
	// processTokens says that the keys are held only in this process's
	// memory (an in-memory store, no FailOver), so that a token unique in
	// this process will do: a counter, shorter and cheaper to make than
	// storekit.NewToken's.
	processTokens bool
	// leaseless says that Lock.Hold needs no Lease: the keys are held in
	// this process's memory and given back only early, with no Observer to
	// time the hold.
	leaseless bool

	health  health
	logs    logGates
	orphans orphans
	stats   counters
	// live and fallbackLive are what this process knows of the store's
	// and the Fallback's answers (see watch).
	live, fallbackLive *liveness
}

// newLimiter returns a limiter on st under policy p, whose zero fields take
// their defaults. It fails with ErrInvalid when p is not usable.
func newLimiter(st Store, p policy) (*limiter, error) {
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
	l := &limiter{store: st, p: p}
	l.live = livenessOf(st)
	if p.Fallback != nil {
		l.fallbackLive = livenessOf(p.Fallback)
	}
	l.notifier, _ = st.(store.Notifier)
	l.quota, _ = st.(store.Quota)
	l.recorder, _ = st.(store.Recorder)
	_, l.storeLocal = st.(storekit.InMemory)
	_, l.fallbackLocal = p.Fallback.(storekit.InMemory)
	l.processTokens = l.storeLocal && p.WhenStoreFails != FailOver
	l.leaseless = l.processTokens && (p.Mode == Dedupe || p.Mode == Cooldown) && !p.Fence && !p.Reentrant &&
		p.Wait <= 0 && p.Observer == nil
	return l, nil
}

// servable checks that st (and the Fallback) can serve p. A store that
// cannot serve the policy's kind of request (a Redlock store refuses Fence
// and Reentrant, quotas and records) would fail every call as a store
// error, which WhenStoreFails turns into admissions when failing open:
// refuse the policy now instead.
func servable(st Store, p policy) error {
	if r, ok := st.(interface{ Refuses(store.Request) error }); ok {
		req := store.Request{Key: storekit.Key(p.Prefix, p.Name, "check"), Token: "check", TTL: p.TTL,
			Fence: p.Fence, Reentrant: p.Reentrant}
		if err := r.Refuses(req); err != nil {
			return fmt.Errorf("policy %q: %w", p.Name, err) // err matches ErrInvalid
		}
	}
	if err := remoteWindow(st, p); err != nil {
		return err
	}
	switch p.Mode {
	case ModeQuota:
		return quotaStores(st, p)
	case ModeReplay:
		return recordStores(st, p)
	}
	return nil
}

// minRemoteTTL is the shortest TTL of a key held on a store outside this
// process: a grant is valid for its TTL less storekit.Drift (2 ms and 1%),
// counted from when the request was sent, so that a shorter one would be
// spent before its reply arrived.
const minRemoteTTL = 3 * time.Millisecond

// remoteWindow checks that a policy's keys can be held on its store (and
// its Fallback, under FailOver) when that is outside this process: with a
// TTL under minRemoteTTL nearly every grant would come back spent, be
// released and be counted as a store failure, which failing open turns
// into no limit at all. A Quota keeps no lock, and an Exclusive key's
// LeaseTTL is at least as long already.
func remoteWindow(st Store, p policy) error {
	if p.Mode == ModeQuota || p.TTL >= minRemoteTTL {
		return nil
	}
	_, local := st.(storekit.InMemory)
	if p.WhenStoreFails == FailOver {
		_, fallbackLocal := p.Fallback.(storekit.InMemory)
		local = local && fallbackLocal
	}
	if local {
		return nil
	}
	return invalid("policy %q: window %v is shorter than %v, the least a key on a store outside this process can be held for "+
		"(a grant is valid for its TTL less a clock-drift allowance of 2ms and 1%%, from when it was asked for)", p.Name, p.TTL, minRemoteTTL)
}

// quotaStores checks that the store (and the Fallback, under FailOver) of a
// Quota policy keep quotas. A store without them would fail every request,
// which failing open would turn into no limit at all.
func quotaStores(st Store, p policy) error {
	if why := keepsQuotas(st); why != "" {
		return invalid("policy %q: a Quota policy needs a store that keeps quotas: %s", p.Name, why)
	}
	if p.WhenStoreFails == FailOver {
		if why := keepsQuotas(p.Fallback); why != "" {
			return invalid("policy %q: the Fallback of a Quota policy must keep quotas: %s", p.Name, why)
		}
	}
	return nil
}

// keepsQuotas returns "" when st implements store.Quota, and why not
// otherwise.
func keepsQuotas(st Store) string {
	if _, ok := st.(store.Quota); !ok {
		return fmt.Sprintf("%T does not implement store.Quota", st)
	}
	return ""
}

// key returns the stored key for id under this limiter's policy.
func (l *limiter) key(id string) string { return storekit.Key(l.p.Prefix, l.p.Name, id) }

// keyTokenBuf is the size of the stack buffer request builds a key and a
// token in: a default prefix, a policy name and an identity of up to about
// 60 bytes fit. Longer ones are built on the heap, as append grows it.
const keyTokenBuf = 160

// request returns the store request that acquires the key for id for ttl:
// the key, and a new token (or, under LockConfig.Reentrant, the owner ctx
// carries, if any). The key and the token are built into one buffer and
// become one string, which they share: one allocation instead of two for
// every acquisition. The lease and the store's lock keep both, so they
// mostly live and die together; what keeps the key longer keeps the
// token's 31 bytes too (a memstore fence counter keeps its key for the
// fence TTL).
func (l *limiter) request(ctx context.Context, id string, ttl time.Duration) store.Request {
	req := store.Request{TTL: ttl, Fence: l.p.Fence, Reentrant: l.p.Reentrant}
	if req.Reentrant {
		req.Token = ownerFrom(ctx)
	}
	var buf [keyTokenBuf]byte
	b := storekit.AppendKey(buf[:0], l.p.Prefix, l.p.Name, id)
	n := len(b)
	switch {
	case req.Token != "":
	case l.processTokens:
		b = seq.Append(b, localTokens.Add(1))
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

// localTokens numbers the tokens of keys that only this process's memory
// holds (see limiter.processTokens).
var localTokens atomic.Uint64

// acquire is Acquire for ttl.
func (l *limiter) acquire(ctx context.Context, id string, ttl time.Duration) (*Lease, error) {
	req := l.request(ctx, id, ttl)
	// The first try is sent now, which is also when the wait (if any)
	// starts: one clock reading for both. An in-memory store decides on
	// this machine's clock during the call, so a lease from it is dated
	// when granted (see granted), and a refusal needs no reading at all.
	var sent int64
	if !l.processTokens || l.p.Wait > 0 || l.p.Observer != nil {
		sent = monoNow()
	}
	lease, remaining, err := l.tryAt(ctx, req, sent)
	if lease != nil || err != nil {
		return lease, err
	}
	if l.p.Wait <= 0 {
		return nil, &ContendedError{RetryAfter: remaining}
	}
	lease, _, err = l.wait(ctx, req, remaining, monoTime(sent).Add(l.p.Wait), nil)
	return lease, err
}

// earliest returns the earlier of a and b.
func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// wait retries a held key with backoff until it is acquired, deadline (the
// start of the acquisition plus LockConfig.Wait) passes or ctx ends. When the
// store is a Notifier, a release wakes it at once. When look is not nil, it
// is called after every attempt that finds the key held, and the wait ends
// with the record it returns, if any (Claim).
func (l *limiter) wait(ctx context.Context, req store.Request, remaining time.Duration, deadline time.Time, look lookFunc) (*Lease, []byte, error) {
	var wake <-chan struct{}
	if l.notifier != nil {
		// Setting up the watch is a store call: it ends with the wait,
		// the store timeout or ctx, whichever comes first.
		wctx, cancel := context.WithDeadline(ctx, earliest(deadline, time.Now().Add(l.p.Timeout)))
		w, stop, err := l.notifier.Watch(wctx, req.Key)
		cancel()
		if err == nil {
			defer stop()
			wake = w
			// The holder may have released (or recorded) between the
			// first try and the watch: look again before sleeping.
			lease, rec, rem, err := l.attempt(ctx, req, look)
			if lease != nil || rec != nil || err != nil {
				return lease, rec, err
			}
			remaining = rem
		}
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for attempt := 1; ; attempt++ {
		left := time.Until(deadline)
		if left <= 0 {
			return nil, nil, &ContendedError{RetryAfter: remaining}
		}
		pause := l.p.Backoff(attempt)
		if pause > left {
			pause = left
		}
		timer.Reset(pause)
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-wake:
			timer.Stop()
		case <-timer.C:
		}
		lease, rec, rem, err := l.attempt(ctx, req, look)
		if lease != nil || rec != nil || err != nil {
			return lease, rec, err
		}
		remaining = rem
	}
}

// lookFunc reads the record of a held key for Claim: nil when there is none.
type lookFunc func(ctx context.Context) ([]byte, error)

// attempt is one try of a waiting acquisition and, when the key is held and
// look is not nil, one look for its record.
func (l *limiter) attempt(ctx context.Context, req store.Request, look lookFunc) (*Lease, []byte, time.Duration, error) {
	lease, rem, err := l.try(ctx, req)
	if lease != nil || err != nil || look == nil {
		return lease, nil, rem, err
	}
	rec, err := look(ctx)
	return nil, rec, rem, err
}

// try makes one acquisition (see tryFailOver for FailOver). It returns a
// lease, or the holder's remaining time, or an error.
func (l *limiter) try(ctx context.Context, req store.Request) (*Lease, time.Duration, error) {
	return l.tryAt(ctx, req, monoNow())
}

// tryAt is try sent at the monotonic time sent (see monoNow).
func (l *limiter) tryAt(ctx context.Context, req store.Request, sent int64) (*Lease, time.Duration, error) {
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

// ask makes one acquisition in the store, not under FailOver, sent at the
// monotonic time sent (0 when not read: see acquire). It returns the
// store's grant, or the caller's context error, or a store error handled
// as failed says.
func (l *limiter) ask(ctx context.Context, req store.Request, sent int64) (store.Grant, error) {
	if err := ctx.Err(); err != nil {
		return store.Grant{}, err
	}
	var g store.Grant
	var err error
	if l.storeLocal && l.p.Observer == nil {
		g, err = l.store.Acquire(ctx, req) // nothing to bound or time
	} else {
		g, err = l.call(ctx, req, sent)
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

// failed handles an acquisition the store did not answer. The command may
// still have taken the key with req's token (the reply was lost or came
// too late), so the key is released in the background once the store
// answers. It returns the caller's context error when that ended first, and
// a store error otherwise.
func (l *limiter) failed(ctx context.Context, st Store, req store.Request, sent int64, err error) error {
	l.releaseLater(ctx, st, req, sent, err)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	l.countFailure(st, "acquire", err)
	return &storeError{op: "acquire", err: err}
}

// countFailure counts a store error of the operation op (an acquisition, a
// quota decision, a record read) and logs it; for the primary store it
// also records it in the store's health. A shed call is no store error:
// the store answers (see watch); it is logged as what it is.
func (l *limiter) countFailure(st Store, op string, err error) {
	if isShed(err) {
		l.logLimited(slog.LevelWarn, "shed", "throttle: request shed: this process waited too long for a store that answers, or with too many calls",
			"op", op, "waiting", l.live.waiting.Load())
		return
	}
	l.stats.storeErrors.Add(1)
	if st == l.store {
		l.health.failed(l)
	}
	l.logStoreError(op, err)
}

// granted turns a store's answer into a lease, or the holder's remaining
// time. A grant whose validity is already spent (the reply came after the
// TTL, less the drift allowance) is no use: work started on it could run
// beside the next holder. It is released in the background and reported as
// a store failure. The answer is the Fallback's when fallback is set, and
// the store's otherwise; mirror is the Fallback when it mirrors the store's
// grant (tryPrimary), and nil otherwise.
//
// The grant of an in-memory store is not checked: it was decided on this
// machine's clock during the call, so there is no reply that could come
// late and no other clock to drift from, and the check would cost a clock
// reading on every admission for nothing.
func (l *limiter) granted(ctx context.Context, fallback bool, mirror Store, req store.Request, g store.Grant, sent int64) (*Lease, time.Duration, error) {
	if !g.Acquired {
		l.stats.rejected.Add(1)
		return nil, g.Remaining, nil
	}
	if sent == 0 {
		sent = monoNow()
	}
	lease := newLease(l, fallback, req, g, sent)
	lease.mirrored = mirror != nil
	local := l.storeLocal
	if fallback {
		local = l.fallbackLocal
	}
	if !local && lease.ValidFor() <= 0 {
		st := lease.holder()
		l.releaseLater(ctx, st, req, sent, errLate)
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

// call makes one acquisition in the store, bounded as watch says. sent is when the call starts (see monoNow), for the Observer.
func (l *limiter) call(ctx context.Context, req store.Request, sent int64) (store.Grant, error) {
	g, err := l.bounded(ctx, l.store, req)
	if l.p.Observer != nil {
		l.storeCallSince(ctx, "acquire", sent, callFailed(ctx, err))
	}
	return g, err
}

// bounded is call in st, the store or the Fallback, without the Observer's
// report, bounded as watch says.
func (l *limiter) bounded(ctx context.Context, st Store, req store.Request) (store.Grant, error) {
	var g store.Grant
	err := l.callStore(ctx, st, 0, func(ctx context.Context) (err error) {
		g, err = st.Acquire(ctx, req)
		return err
	})
	return g, err
}

// logDryRun logs, at most once a second, that a request went ahead under
// Options.DryRun although err (an ErrContended) would have turned it away;
// the Observer counts every one.
func (l *limiter) logDryRun(err error) {
	var ce *ContendedError
	if !errors.As(err, &ce) {
		return
	}
	l.logLimited(slog.LevelInfo, "dry run", "throttle: dry run: a request that would have been turned away went ahead",
		"mode", l.p.Mode.String(), "retry_after", ce.RetryAfter)
}

// Admit is Acquire with Options.WhenStoreFails applied, for a request that
// must be answered now; package guard builds the middleware on it. A lease
// admits the request; an error (ErrContended, ErrStore when failing closed,
// or the context's) turns it away; nil and no error mean that the store
// failed open: the request goes ahead unguarded, logged and counted. Under
// Options.DryRun, ErrContended still says what would have happened; the
// caller lets the request through. The Observer is told the outcome.
func (l *limiter) Admit(ctx context.Context, id string) (*Lease, error) {
	lease, err := l.acquire(ctx, id, l.p.TTL)
	return lease, l.admitted(ctx, lease != nil && lease.onFallback, err)
}

// admitted applies the policy to the outcome err of an admission (nil when
// granted, by the Fallback when fallback is set) and returns Admit's
// error: err itself, or nil when a store error fails open.
func (l *limiter) admitted(ctx context.Context, fallback bool, err error) error {
	if err == nil || !isStoreError(err) {
		if l.p.DryRun && err != nil {
			l.logDryRun(err)
		}
		if l.p.Observer != nil {
			l.observeAdmission(ctx, fallback, 0, err)
		}
		return err
	}
	return l.storeFailed(ctx, err)
}

// storeFailed applies the policy to a store error of an admission: nil to
// fail open, err to turn the request away. A shed request (see watch) is
// turned away whatever WhenStoreFails says: the store answers, so letting
// it through would admit the duplicates of a burst.
func (l *limiter) storeFailed(ctx context.Context, err error) error {
	switch {
	case isShed(err):
		l.stats.shed.Add(1)
		l.observe(ctx, Event{Kind: Shed})
		return err
	case l.p.WhenStoreFails == FailOpen:
		l.stats.failedOpen.Add(1)
		l.observe(ctx, Event{Kind: FailedOpen})
		return nil
	}
	l.observe(ctx, Event{Kind: FailedClosed})
	return err
}

// isStoreError is errors.Is(err, ErrStore), without its reflection for the
// errors the acquisition path itself returns: a rejection is the common
// case of a hot key, and should cost no more than it must.
func isStoreError(err error) bool {
	switch err.(type) {
	case *ContendedError:
		return false
	case *storeError:
		return true
	}
	return errors.Is(err, ErrStore)
}

// observeAdmission tells the Observer the outcome of an admission that the
// store decided (or the caller's context ended): admitted (by the store or
// its fallback), with cost for a quota, or rejected.
func (l *limiter) observeAdmission(ctx context.Context, fallback bool, cost int, err error) {
	switch {
	case err == nil && fallback:
		l.observe(ctx, Event{Kind: Fallback, Cost: cost})
	case err == nil:
		l.observe(ctx, Event{Kind: Admitted, Cost: cost})
	default:
		l.observeRejection(ctx, err)
	}
}

// observeRejection tells the Observer of a rejection (or, under DryRun, a
// would-be rejection); other errors (the caller's context) are no outcome.
func (l *limiter) observeRejection(ctx context.Context, err error) {
	var ce *ContendedError
	switch {
	case !errors.As(err, &ce):
	case l.p.DryRun:
		l.observe(ctx, Event{Kind: DryRunRejected, RetryAfter: ce.RetryAfter})
	default:
		l.observe(ctx, Event{Kind: Rejected, RetryAfter: ce.RetryAfter})
	}
}
