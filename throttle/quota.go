package throttle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

// Decision is a Quota policy's answer to one request: whether it is
// allowed, how many more would be, and when the quota refills. Package store
// documents every field.
type Decision = store.Decision

// QuotaConfig configures a Quota. Only Name is required. The rate is not
// here: it is a value of each call, so that requests may have rates of
// their own (a plan's, a tier's).
type QuotaConfig struct {
	// Name names the quota in stored keys and in the RateLimit headers: 1
	// to 64 bytes of printable ASCII without '"' or '\'.
	Name string
	// Wait is how long Allow may sleep for the quota to refill, when it
	// will have refilled within the wait. Zero means decide at once.
	Wait time.Duration
	Options
}

// Quota is rate limiting proper: it decides whether a request of a key
// fits in a Rate now, with one store call (on Redis one round trip, timed
// by the Redis server's clock, so that processes with skewed clocks agree).
// It keeps no lock but one timestamp per key (the generic cell rate
// algorithm, GCRA), which expires when the quota is full again. It is safe
// for concurrent use; make one per policy at start-up and share it.
type Quota struct{ l *limiter }

// NewQuota returns a Quota on st configured by c. It fails with ErrInvalid
// when c is not usable or st (or, under FailOver, the Fallback) keeps no
// quotas (store.Quota).
func NewQuota(st Store, c QuotaConfig) (*Quota, error) {
	l, err := newLimiter(st, policy{Name: c.Name, Mode: ModeQuota, Wait: c.Wait, Options: c.Options})
	if err != nil {
		return nil, err
	}
	return &Quota{l}, nil
}

// Allow decides whether a request of cost from id fits in r now, and
// charges it when it does. A refused request is not an error: it is a
// Decision whose Allowed is false and whose RetryAfter says when the same
// cost would fit. With Wait, Allow sleeps for the quota to refill when it
// will have within the wait, and decides again.
//
// Cost 0 peeks without charging. A negative cost gives back -cost requests
// charged earlier (never more than makes the quota full), for a request
// that turned out not to count. Allow fails with ErrInvalid for a rate that
// is not usable or a cost beyond ±Burst (a cost above Burst could never be
// allowed: it is the caller's mistake, not a rejection), with ErrStore when
// the store failed (under FailOver, the Fallback decides instead), or with
// ctx.Err().
func (q *Quota) Allow(ctx context.Context, id string, r Rate, cost int) (Decision, error) {
	d, _, err := q.l.allowN(ctx, id, r, cost)
	return d, err
}

// Admit is Allow with WhenStoreFails applied, for a request that must be
// answered now: package guard builds the middleware on it. A request of
// cost 0 is allowed only while one of cost 1 would be. An allowed request
// gets its Decision and no error; a refused one gets its Decision too (for
// the RateLimit headers) and a *ContendedError that says when to retry;
// ErrStore when failing closed, ErrInvalid or the context's error come with
// a nil Decision; nil and no error mean that the store failed open: the
// request goes ahead unmetered, logged and counted.
func (q *Quota) Admit(ctx context.Context, id string, r Rate, cost int) (*Decision, error) {
	var d Decision
	return q.l.admitN(ctx, id, r, cost, &d)
}

// Config returns the quota's config with its defaults filled in.
func (q *Quota) Config() QuotaConfig {
	return QuotaConfig{Name: q.l.p.Name, Wait: q.l.p.Wait, Options: q.l.p.Options}
}

// Stats returns a snapshot of the quota's counters.
func (q *Quota) Stats() Stats { return q.l.Stats() }

// allowN decides a request of cost in r, and says whether the Fallback
// decided.
func (l *limiter) allowN(ctx context.Context, id string, r Rate, cost int) (Decision, bool, error) {
	if r.Burst == 0 {
		r.Burst = r.Limit
	}
	if err := storekit.Check(r, cost); err != nil {
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
// Options.Timeout, or in the Fallback under FailOver while the store is
// down or when it fails. It says whether the Fallback decided.
func (l *limiter) allowOnce(ctx context.Context, key string, r store.Rate, cost int) (Decision, bool, error) {
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
func (l *limiter) allowFallback(ctx context.Context, key string, r store.Rate, cost int) (Decision, bool, error) {
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

// allowIn calls q.AllowN bounded by Options.Timeout, as call does for
// acquisitions.
func (l *limiter) allowIn(ctx context.Context, q store.Quota, key string, r store.Rate, cost int) (Decision, error) {
	start := l.startCall()
	d, err := l.allowBounded(ctx, q, key, r, cost)
	l.storeCall(ctx, "quota", start, callFailed(ctx, err))
	return d, err
}

// allowBounded is allowIn without the Observer's report.
func (l *limiter) allowBounded(ctx context.Context, q store.Quota, key string, r store.Rate, cost int) (Decision, error) {
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
func (l *limiter) count(d Decision, cost int) {
	switch {
	case cost <= 0:
	case d.Allowed:
		l.stats.acquired.Add(1)
	default:
		l.stats.rejected.Add(1)
	}
}

// admitN is allowN with WhenStoreFails applied, for a request that must
// be answered now, the decision put in out: see Quota.Admit.
func (l *limiter) admitN(ctx context.Context, id string, r Rate, cost int, out *Decision) (*Decision, error) {
	d, fallback, err := l.allowN(ctx, id, r, cost)
	if err == nil && cost == 0 && d.Remaining == 0 {
		// A free request goes ahead only while a paid one would: it must
		// not slip past a spent quota (a login form's, say).
		d.Allowed, d.RetryAfter = false, storekit.NextRefill(r, d)
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
