package throttle

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// probeInterval is how long FailOver stays on the fallback store before one
// caller tries the primary again.
const probeInterval = time.Second

// monoStart anchors monotonic time stamps kept in atomics.
var monoStart = time.Now()

func monoNow() int64 { return int64(time.Since(monoStart)) }

// Limiter takes keys in a Store under one Policy. It is safe for concurrent
// use; make one per policy at start-up and share it.
type Limiter struct {
	store    Store
	notifier store.Notifier
	p        Policy

	// downUntil is the monotonic time until which FailOver skips the
	// primary store; 0 while the primary answers.
	downUntil atomic.Int64
	// lastLog is the monotonic time of the last store-error log line; it
	// keeps an outage from flooding the log.
	lastLog atomic.Int64

	stats counters
}

// New returns a Limiter on st under policy p, whose zero fields take their
// defaults. It fails with ErrInvalid when p is not usable.
func New(st Store, p Policy) (*Limiter, error) {
	if st == nil {
		return nil, invalid("nil store")
	}
	p, err := p.withDefaults()
	if err != nil {
		return nil, err
	}
	l := &Limiter{store: st, p: p}
	l.notifier, _ = st.(store.Notifier)
	return l, nil
}

// Policy returns the limiter's policy with its defaults filled in.
func (l *Limiter) Policy() Policy { return l.p }

// key returns the stored key for id under this limiter's policy.
func (l *Limiter) key(id string) string { return store.Key(l.p.Prefix, l.p.Name, id) }

// Acquire takes the key for id for Policy.TTL() and returns the lease only
// on success. It fails with a *ContendedError when somebody holds the key
// (after waiting up to Policy.Wait), with ErrStore when the store failed, or
// with ctx.Err().
func (l *Limiter) Acquire(ctx context.Context, id string) (*Lease, error) {
	return l.acquireKey(ctx, l.key(id), l.p.TTL())
}

func (l *Limiter) acquireKey(ctx context.Context, key string, ttl time.Duration) (*Lease, error) {
	req := store.Request{Key: key, TTL: ttl, Fence: l.p.Fence, Reentrant: l.p.Reentrant}
	if req.Reentrant {
		req.Token = ownerFrom(ctx)
	}
	if req.Token == "" {
		req.Token = store.NewToken()
	}
	lease, remaining, err := l.try(ctx, req)
	if lease != nil || err != nil {
		return lease, err
	}
	if l.p.Wait <= 0 {
		return nil, &ContendedError{RetryAfter: remaining}
	}
	return l.wait(ctx, req, remaining)
}

// wait retries a held key with backoff until it is acquired, Policy.Wait
// runs out or ctx ends. When the store is a Notifier, a release wakes it at
// once.
func (l *Limiter) wait(ctx context.Context, req store.Request, remaining time.Duration) (*Lease, error) {
	deadline := time.Now().Add(l.p.Wait)
	var wake <-chan struct{}
	if l.notifier != nil {
		w, stop, err := l.notifier.Watch(ctx, req.Key)
		if err == nil {
			defer stop()
			wake = w
			// The holder may have released between the first try and
			// the watch: try again before sleeping.
			lease, rem, err := l.try(ctx, req)
			if lease != nil || err != nil {
				return lease, err
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
			return nil, &ContendedError{RetryAfter: remaining}
		}
		pause := l.p.Backoff(attempt)
		if pause > left {
			pause = left
		}
		timer.Reset(pause)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-wake:
			timer.Stop()
		case <-timer.C:
		}
		lease, rem, err := l.try(ctx, req)
		if lease != nil || err != nil {
			return lease, err
		}
		remaining = rem
	}
}

// try makes one acquisition on the primary store or, under FailOver while
// the primary is failing, on the fallback. It returns a lease, or the
// holder's remaining time, or an error.
func (l *Limiter) try(ctx context.Context, req store.Request) (*Lease, time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	st := l.store
	failover := l.p.WhenStoreFails == FailOver
	if failover && l.skipPrimary() {
		st = l.p.Fallback
	}
	sent := time.Now()
	g, err := l.call(ctx, st, req)
	if err != nil && failover && st == l.store && ctx.Err() == nil {
		l.downUntil.Store(monoNow() + int64(probeInterval))
		l.logStoreError("acquire", err)
		st = l.p.Fallback
		sent = time.Now()
		g, err = l.call(ctx, st, req)
	}
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, 0, ctxErr
		}
		l.stats.storeErrors.Add(1)
		return nil, 0, &storeError{op: "acquire", err: err}
	}
	if st == l.store && failover && l.downUntil.Load() != 0 {
		l.downUntil.Store(0)
	}
	if !g.Acquired {
		l.stats.rejected.Add(1)
		return nil, g.Remaining, nil
	}
	l.stats.acquired.Add(1)
	if st != l.store {
		l.stats.fallback.Add(1)
	}
	return newLease(l, st, req, g, sent), 0, nil
}

// skipPrimary reports whether FailOver should use the fallback now. Once the
// down period is over, exactly one caller (the one that wins the swap) probes
// the primary while the others stay on the fallback.
func (l *Limiter) skipPrimary() bool {
	until := l.downUntil.Load()
	if until == 0 {
		return false
	}
	now := monoNow()
	if now < until {
		return true
	}
	return !l.downUntil.CompareAndSwap(until, now+int64(probeInterval))
}

// call makes one acquisition bounded by Policy.Timeout. The bound costs a
// timer and a context per call, so it is skipped where it cannot matter: for
// an in-memory store, and when ctx already ends sooner.
func (l *Limiter) call(ctx context.Context, st Store, req store.Request) (store.Grant, error) {
	if _, local := st.(store.InMemory); local {
		return st.Acquire(ctx, req)
	}
	if d, ok := ctx.Deadline(); ok && time.Until(d) <= l.p.Timeout {
		return st.Acquire(ctx, req)
	}
	ctx, cancel := context.WithTimeout(ctx, l.p.Timeout)
	defer cancel()
	return st.Acquire(ctx, req)
}

// logStoreError logs a store error at most once a second, so that an outage
// does not flood the log; Stats counts every one.
func (l *Limiter) logStoreError(op string, err error) {
	now := monoNow()
	last := l.lastLog.Load()
	if last != 0 && now-last < int64(time.Second) {
		return
	}
	if !l.lastLog.CompareAndSwap(last, now) {
		return
	}
	l.p.logger().Warn("throttle: store error", "policy", l.p.Name, "op", op,
		"when_store_fails", l.p.WhenStoreFails.String(), "err", err)
}

// Admit is Acquire with Policy.WhenStoreFails applied, for a request that
// must be answered now; package guard builds the middleware on it. A lease
// admits the request; an error (ErrContended, ErrStore when failing closed,
// or the context's) turns it away; nil and no error mean that the store
// failed open: the request goes ahead unguarded, logged and counted.
func (l *Limiter) Admit(ctx context.Context, id string) (*Lease, error) {
	lease, err := l.acquireKey(ctx, l.key(id), l.p.TTL())
	if err == nil || !errors.Is(err, ErrStore) {
		return lease, err
	}
	l.logStoreError("acquire", err)
	if l.p.WhenStoreFails == FailOpen {
		l.stats.failedOpen.Add(1)
		return nil, nil
	}
	return nil, err
}
