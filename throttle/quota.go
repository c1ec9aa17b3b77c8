package throttle

import (
	"context"
	"fmt"
	"time"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

// QuotaConfig configures a Quota. Only Name is required. The Rate is an
// argument of each call, so that requests may have rates of their own.
type QuotaConfig struct {
	// Name names the quota in stored keys and in the RateLimit headers: 1
	// to 64 bytes of printable ASCII without '"' or '\'.
	Name string
	// Wait is how long Allow may sleep for a refill due within it (0: decide at once).
	Wait time.Duration
	Options
}

// Quota is rate limiting proper: it decides whether a request of a key
// fits in a Rate now, with one store call (on Redis timed by the server's
// clock, so that processes with skewed clocks agree). It keeps no lock, only
// one GCRA timestamp per key, which expires when the quota is full again.
// It is safe for concurrent use; make one per policy and share it.
type Quota struct{ l *limiter }

// NewQuota returns a Quota on st configured by c. It fails with
// store.ErrInvalid when c is not usable or st (or, under FailOver, the
// Fallback) keeps no quotas.
func NewQuota(st store.Store, c QuotaConfig) (*Quota, error) {
	l, err := newLimiter(st, policy{Name: c.Name, Mode: ModeQuota, Wait: c.Wait, Options: c.Options})
	if err != nil {
		return nil, err
	}
	return &Quota{l}, nil
}

// Allow decides whether a request of cost from id fits in r now, and
// charges it when it does. A refused request is no error: its Decision's
// Allowed is false and RetryAfter says when the same cost would fit. With
// Wait, Allow sleeps for a refill due within the wait, and decides again.
//
// Cost 0 peeks without charging; a negative cost gives back -cost requests
// charged earlier (never past a full quota). Allow fails with store.ErrInvalid
// for an unusable rate or a cost beyond ±Burst, with ErrStore when the store
// (and under FailOver the Fallback) failed, or with ctx.Err().
func (q *Quota) Allow(ctx context.Context, id string, r Rate, cost int) (store.Decision, error) {
	d, _, err := q.l.allowN(ctx, id, r, cost)
	return d, err
}

// Admit is Allow with WhenStoreFails applied, for a request that must be
// answered now: package guard builds the middleware on it. A request of
// cost 0 is allowed only while one of cost 1 would be. A refused request
// gets its Decision (for the RateLimit headers) and a *ContendedError;
// other errors come with no Decision; no Decision and no error mean that
// the store failed open: the request goes ahead unmetered.
func (q *Quota) Admit(ctx context.Context, id string, r Rate, cost int) (*store.Decision, error) {
	var d store.Decision // small enough for Admit to be inlined: on the caller's stack
	return q.l.admitN(ctx, id, r, cost, &d)
}

// admitN is Quota.Admit, the decision put in out.
func (l *limiter) admitN(ctx context.Context, id string, r Rate, cost int, out *store.Decision) (*store.Decision, error) {
	d, fallback, err := l.allowN(ctx, id, r, cost)
	if err != nil {
		return nil, l.admitted(ctx, fallback, cost, err)
	}
	if cost == 0 && d.Remaining == 0 {
		// A free request must not slip past a spent quota (a login form's).
		d.Allowed, d.RetryAfter = false, storekit.NextRefill(r, d)
	}
	if !d.Allowed {
		err, fallback = &ContendedError{RetryAfter: d.RetryAfter}, false
	}
	*out = d
	return out, l.admitted(ctx, fallback, cost, err)
}

// Config returns the quota's config with its defaults filled in.
func (q *Quota) Config() QuotaConfig {
	return QuotaConfig{Name: q.l.p.Name, Wait: q.l.p.Wait, Options: q.l.p.Options}
}

// Stats returns a snapshot of the quota's counters.
func (q *Quota) Stats() Stats { return q.l.Stats() }

// allowN is Allow, and says whether the Fallback decided.
func (l *limiter) allowN(ctx context.Context, id string, r Rate, cost int) (store.Decision, bool, error) {
	if r.Burst == 0 {
		r.Burst = r.Limit
	}
	if err := storekit.Check(r, cost); err != nil {
		return store.Decision{}, false, fmt.Errorf("policy %q: %w", l.p.Name, err)
	}
	key := l.key(id)
	var deadline time.Time
	for {
		d, fb, err := l.allowOnce(ctx, key, r, cost)
		if err != nil || d.Allowed || l.p.Wait <= 0 {
			return d, fb, err
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(l.p.Wait)
		}
		if time.Until(deadline) < d.RetryAfter {
			return d, fb, nil
		}
		timer := time.NewTimer(d.RetryAfter)
		select {
		case <-ctx.Done():
			timer.Stop()
			return store.Decision{}, false, ctx.Err()
		case <-timer.C:
		}
	}
}

// allowOnce makes one decision: in the store, or under FailOver in the
// Fallback while the store is skipped or when it fails.
func (l *limiter) allowOnce(ctx context.Context, key string, r store.Rate, cost int) (store.Decision, bool, error) {
	if err := ctx.Err(); err != nil {
		return store.Decision{}, false, err
	}
	failOver := l.p.WhenStoreFails == FailOver
	if !failOver || !l.health.skip() {
		sent := l.since()
		d, err := l.allowIn(ctx, l.store, key, r, cost)
		l.storeCall(ctx, "quota", sent, callFailed(ctx, err))
		if err == nil {
			l.health.answered(l)
			l.count(d, cost, false)
			return d, false, nil
		}
		// The Fallback decides unless ctx ended or the call was shed.
		err = l.storeErr(ctx, l.store, "quota", err)
		if !failOver || !isStoreError(err) || isShed(err) {
			return store.Decision{}, false, err
		}
	}
	d, err := l.allowIn(ctx, l.p.Fallback, key, r, cost)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return store.Decision{}, true, ctxErr
		}
		l.logStoreError("quota-fallback", err)
		return store.Decision{}, true, &storeError{op: "quota", err: err}
	}
	l.count(d, cost, true)
	return d, true, nil
}

// allowIn is one AllowN call to st, bounded by callStore.
func (l *limiter) allowIn(ctx context.Context, st store.Store, key string, r store.Rate, cost int) (store.Decision, error) {
	var d store.Decision
	err := l.callStore(ctx, st, 0, func(ctx context.Context) (err error) {
		d, err = st.(store.Quota).AllowN(ctx, key, r, cost) // servable checked it
		return err
	})
	return d, err
}

// count adds a decision to the Stats; peeks and refunds count nowhere.
func (l *limiter) count(d store.Decision, cost int, fallback bool) {
	switch {
	case cost <= 0:
	case d.Allowed:
		l.stats.acquired.Add(1)
		if fallback {
			l.stats.fallback.Add(1)
		}
	default:
		l.stats.rejected.Add(1)
	}
}
