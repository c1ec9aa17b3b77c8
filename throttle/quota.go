package throttle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// Decision is a Quota policy's answer to one request: whether it is
// allowed, how many more would be, and when the quota refills. Package store
// documents every field.
type Decision = store.Decision

// Allow is AllowN with a cost of 1.
func (l *Limiter) Allow(ctx context.Context, id string) (Decision, error) {
	return l.AllowN(ctx, id, 1)
}

// AllowN decides whether a request of cost from id fits in a Quota
// policy's quota now, and charges it when it does: one store call (on
// Redis one round trip, two for a returning user while most users are new,
// timed by the Redis server's clock, so that processes with skewed clocks
// agree). A refused request is not an error: it is a
// Decision whose Allowed is false and whose RetryAfter says when the same
// cost would fit. With Policy.Wait, AllowN sleeps for the quota to refill
// when it will have within the wait, and decides again.
//
// Cost 0 peeks without charging. A negative cost gives back -cost requests
// charged earlier (never more than makes the quota full), for a request
// that turned out not to count. AllowN fails with ErrInvalid for a policy
// that is not Quota or a cost beyond ±Burst (a cost above Burst could never
// be allowed: it is the caller's mistake, not a rejection), with ErrStore
// when the store failed (under FailOver, the Fallback decides instead), or
// with ctx.Err().
func (l *Limiter) AllowN(ctx context.Context, id string, cost int) (Decision, error) {
	d, _, err := l.allowN(ctx, id, cost)
	return d, err
}

// allowN is AllowN that also says whether the Fallback decided.
func (l *Limiter) allowN(ctx context.Context, id string, cost int) (Decision, bool, error) {
	if l.p.Mode != Quota {
		return Decision{}, false, invalid("policy %q is %v, not Quota: use Acquire", l.p.Name, l.p.Mode)
	}
	r := l.p.rate()
	if err := r.Check(cost); err != nil {
		return Decision{}, false, fmt.Errorf("policy %q: %w", l.p.Name, err)
	}
	key := l.key(id)
	d, fb, err := l.allowOnce(ctx, key, r, cost)
	if err != nil || d.Allowed || l.p.Wait <= 0 {
		return d, fb, err
	}
	deadline := time.Now().Add(l.p.Wait)
	for {
		// Sleep only when the quota will have refilled within the wait:
		// otherwise the caller learns now what it would learn later.
		if time.Until(deadline) < d.RetryAfter {
			return d, fb, nil
		}
		timer := time.NewTimer(d.RetryAfter)
		select {
		case <-ctx.Done():
			timer.Stop()
			return Decision{}, false, ctx.Err()
		case <-timer.C:
		}
		if d, fb, err = l.allowOnce(ctx, key, r, cost); err != nil || d.Allowed {
			return d, fb, err
		}
	}
}

// allowOnce makes one quota decision: in the store, bounded by
// Policy.Timeout, or in the Fallback under FailOver while the store is
// down or when it fails. It says whether the Fallback decided.
func (l *Limiter) allowOnce(ctx context.Context, key string, r store.Rate, cost int) (Decision, bool, error) {
	if err := ctx.Err(); err != nil {
		return Decision{}, false, err
	}
	failOver := l.p.WhenStoreFails == FailOver
	if failOver && l.health.skip() {
		return l.allowFallback(ctx, key, r, cost)
	}
	d, err := l.allowIn(ctx, l.quota, key, r, cost)
	if err == nil {
		l.health.answered(l)
		l.count(d, cost)
		return d, false, nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return Decision{}, false, ctxErr
	}
	l.countFailure(l.store, "quota", err)
	if failOver && !isShed(err) {
		return l.allowFallback(ctx, key, r, cost)
	}
	return Decision{}, false, &storeError{op: "quota", err: err}
}

// allowFallback decides in the Fallback store under FailOver.
func (l *Limiter) allowFallback(ctx context.Context, key string, r store.Rate, cost int) (Decision, bool, error) {
	d, err := l.allowBounded(ctx, l.p.Fallback.(store.Quota), key, r, cost) // not timed, as in tryFailOver
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return Decision{}, true, ctxErr
		}
		l.logStoreError("quota-fallback", err)
		return Decision{}, true, &storeError{op: "quota", err: err}
	}
	if d.Allowed && cost > 0 {
		l.stats.fallback.Add(1)
	}
	l.count(d, cost)
	return d, true, nil
}

// allowIn calls q.AllowN bounded by Policy.Timeout, as call does for
// acquisitions.
func (l *Limiter) allowIn(ctx context.Context, q store.Quota, key string, r store.Rate, cost int) (Decision, error) {
	start := l.startCall()
	d, err := l.allowBounded(ctx, q, key, r, cost)
	l.storeCall(ctx, "quota", start, callFailed(ctx, err))
	return d, err
}

// allowBounded is allowIn without the Observer's report.
func (l *Limiter) allowBounded(ctx context.Context, q store.Quota, key string, r store.Rate, cost int) (Decision, error) {
	st := l.store
	if q != l.quota {
		st = l.p.Fallback
	}
	var d Decision
	err := l.callStore(ctx, st, 0, func(ctx context.Context) (err error) {
		d, err = q.AllowN(ctx, key, r, cost)
		return err
	})
	return d, err
}

// count adds a decision to the Stats: an allowed charge to Acquired, a
// refusal to Rejected; peeks and refunds count as neither.
func (l *Limiter) count(d Decision, cost int) {
	switch {
	case cost <= 0:
	case d.Allowed:
		l.stats.acquired.Add(1)
	default:
		l.stats.rejected.Add(1)
	}
}

// AdmitN is AllowN with Policy.WhenStoreFails applied, for a request that
// must be answered now: the Quota counterpart of Admit, on which package
// guard builds the middleware. A request of cost 0 is allowed only while
// one of cost 1 would be. An allowed request gets its Decision and no
// error; a refused one gets its Decision too (for the RateLimit headers)
// and a *ContendedError that says when to retry; ErrStore when failing
// closed, ErrInvalid or the context's error come with a nil Decision; nil
// and no error mean that the store failed open: the request goes ahead
// unmetered, logged and counted.
func (l *Limiter) AdmitN(ctx context.Context, id string, cost int) (*Decision, error) {
	// Small enough to be inlined (TestAdmitNInlined), so that a caller
	// that only reads the decision keeps it on its stack: one allocation
	// less per request.
	var d Decision
	return l.admitN(ctx, id, cost, &d)
}

// admitN is AdmitN with the decision written into out, which it returns,
// or nil when there is none (failed open, failed closed, or an error
// before deciding). The caller's storage, rather than a result of its
// own, keeps AdmitN's call to it cheap enough for AdmitN to be inlined.
func (l *Limiter) admitN(ctx context.Context, id string, cost int, out *Decision) (*Decision, error) {
	d, fallback, err := l.allowN(ctx, id, cost)
	if err == nil && cost == 0 && d.Remaining == 0 {
		// A free request goes ahead only while a paid one would: it must
		// not slip past a spent quota (a login form's, say).
		d.Allowed, d.RetryAfter = false, l.p.rate().NextRefill(d)
	}
	switch {
	case err == nil && d.Allowed:
		if l.p.Observer != nil {
			l.observeAdmission(ctx, fallback, cost, nil)
		}
		*out = d
		return out, nil
	case err == nil:
		err = &ContendedError{RetryAfter: d.RetryAfter}
		if l.p.DryRun {
			l.logDryRun(err)
		}
		if l.p.Observer != nil {
			l.observeAdmission(ctx, false, cost, err)
		}
		*out = d
		return out, err
	case errors.Is(err, ErrStore):
		return nil, l.storeFailed(ctx, err)
	}
	return nil, err
}
