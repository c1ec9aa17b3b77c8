package throttle

import (
	"cmp"
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
// one GCRA timestamp per key, which expires when the quota is full again
// (a strict Rate's key keeps the times of its Window's admissions).
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
	c := quotaCall{r: r.Store(), cost: cost}
	if err := q.l.one(&c, id, r.Name); err != nil {
		return store.Decision{}, err
	}
	d, _, err := q.l.decide(ctx, &c)
	return d, err
}

// AllowAll is Allow over several rates decided as one, atomically on every
// store: a request is charged to all of them when each has room for it, and
// to none when any refuses (10 a second and 1,000 a day: a request refused
// by the first does not spend the second). Each rate keeps its own state
// under its Name; the names must differ. The decisions come in the order of
// rates, and are all refused, or all allowed. With one rate it is Allow.
func (q *Quota) AllowAll(ctx context.Context, id string, rates []Rate, cost int) ([]store.Decision, error) {
	c := quotaCall{cost: cost}
	if err := q.l.all(&c, id, rates); err != nil {
		return nil, err
	}
	if _, _, err := q.l.decide(ctx, &c); err != nil {
		return nil, err
	}
	return c.out, nil
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

// AdmitAll is AllowAll with WhenStoreFails applied, as Admit is Allow's: a
// refused request gets every rate's Decision and a *ContendedError whose
// RetryAfter is when the cost would fit them all.
func (q *Quota) AdmitAll(ctx context.Context, id string, rates []Rate, cost int) ([]store.Decision, error) {
	c := quotaCall{cost: cost}
	if err := q.l.all(&c, id, rates); err != nil {
		return nil, q.l.admitted(ctx, false, cost, err)
	}
	d, fallback, err := q.l.decide(ctx, &c)
	if err != nil {
		return nil, q.l.admitted(ctx, fallback, cost, err)
	}
	if cost == 0 && d.Remaining == 0 { // as admitN
		d.Allowed = false
		for i := range c.out {
			if c.out[i].Remaining == 0 {
				d.RetryAfter = max(d.RetryAfter, storekit.NextRefill(c.limits[i].Rate, c.out[i]))
			}
			c.out[i].Allowed = false
		}
	}
	if !d.Allowed {
		err, fallback = &ContendedError{RetryAfter: d.RetryAfter}, false
	}
	return c.out, q.l.admitted(ctx, fallback, cost, err)
}

// Reset clears id's quota under each of rates (by Name, smooth and strict
// alike; none: the plain rate), so that its next request finds it full: an
// operator's answer to a user wrongly locked out. Under FailOver it clears
// the Fallback's too. It fails with ErrStore or ctx.Err().
func (q *Quota) Reset(ctx context.Context, id string, rates ...Rate) error {
	if len(rates) == 0 {
		rates = []Rate{{}}
	}
	keys := make([]string, 0, 2*len(rates))
	for _, r := range rates {
		keys = append(keys, q.l.rateKey(id, r.Name, false), q.l.rateKey(id, r.Name, true))
	}
	return q.l.delete(ctx, keys)
}

// admitN is Quota.Admit, the decision put in out.
func (l *limiter) admitN(ctx context.Context, id string, r Rate, cost int, out *store.Decision) (*store.Decision, error) {
	c := quotaCall{r: r.Store(), cost: cost}
	if err := l.one(&c, id, r.Name); err != nil {
		return nil, l.admitted(ctx, false, cost, err)
	}
	d, fallback, err := l.decide(ctx, &c)
	if err != nil {
		return nil, l.admitted(ctx, fallback, cost, err)
	}
	if cost == 0 && d.Remaining == 0 {
		// A free request must not slip past a spent quota (a login form's).
		d.Allowed, d.RetryAfter = false, storekit.NextRefill(c.r, d)
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

// quotaCall is one decision's question: key under r, or, when limits is
// set, every limit together, their decisions put in out.
type quotaCall struct {
	key    string
	r      store.Rate
	limits []store.Limit
	out    []store.Decision
	cost   int
}

// one checks a call of one rate named name and sets its key.
func (l *limiter) one(c *quotaCall, id, name string) error {
	if err := l.checkRate(name, c.r, c.cost); err != nil {
		return err
	}
	c.key = l.rateKey(id, name, c.r.Strict)
	return nil
}

// all checks a call of several rates and sets its limits, their keys
// (rateKey's) built into one string.
func (l *limiter) all(c *quotaCall, id string, rates []Rate) error {
	if len(rates) == 0 || len(rates) > storekit.MaxLimits {
		return invalid("policy %q: AllowAll takes 1 to %d rates, not %d", l.p.Name, storekit.MaxLimits, len(rates))
	}
	c.limits = make([]store.Limit, len(rates))
	var buf [512]byte
	var ends [storekit.MaxLimits]int
	b := buf[:0]
	for i, r := range rates {
		name := cmp.Or(r.Name, l.p.Name)
		for _, prev := range rates[:i] {
			if cmp.Or(prev.Name, l.p.Name) == name {
				return invalid("policy %q: two rates named %q", l.p.Name, name)
			}
		}
		c.limits[i].Rate = r.Store()
		if err := l.checkRate(name, c.limits[i].Rate, c.cost); err != nil {
			return err
		}
		b = l.appendRateKey(b, id, name, r.Strict)
		ends[i] = len(b)
	}
	keys, start := string(b), 0
	for i := range rates {
		c.limits[i].Key, start = keys[start:ends[i]], ends[i]
	}
	return nil
}

// checkRate checks r, named name ("" for the policy's), for cost.
func (l *limiter) checkRate(name string, r store.Rate, cost int) error {
	if name != "" && !headerToken(name) {
		return invalid("policy %q: rate name %q: 1 to 64 bytes of printable ASCII without quotes or backslashes", l.p.Name, name)
	}
	if err := storekit.Check(r, cost); err != nil {
		return fmt.Errorf("policy %q: %w", l.p.Name, err)
	}
	return nil
}

// rateKey returns the key of id's quota under the rate named name ("" for
// the policy's own), smooth or strict: every rate's key in one hash tag.
func (l *limiter) rateKey(id, name string, strict bool) string {
	var buf [keyTokenBuf]byte
	return string(l.appendRateKey(buf[:0], id, cmp.Or(name, l.p.Name), strict))
}

// appendRateKey appends rateKey's key to b; name is not "".
func (l *limiter) appendRateKey(b []byte, id, name string, strict bool) []byte {
	b = l.appendKey(b, id, name)
	if strict {
		b = append(b, storekit.StrictSuffix...)
	}
	return b
}

// decide makes a checked call's decision, waiting up to Wait for a refill,
// and says whether the Fallback decided. Several limits' decision is their
// sum: allowed when all are, their least Remaining and latest times.
func (l *limiter) decide(ctx context.Context, c *quotaCall) (store.Decision, bool, error) {
	var deadline time.Time
	for {
		d, fb, err := l.decideOnce(ctx, c)
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

// decideOnce makes one decision: in the store, or under FailOver in the
// Fallback while the store is skipped or when it fails.
func (l *limiter) decideOnce(ctx context.Context, c *quotaCall) (store.Decision, bool, error) {
	if err := ctx.Err(); err != nil {
		return store.Decision{}, false, err
	}
	if n, ok := l.store.(storekit.Near); ok && c.limits == nil { // a remembered refusal
		if d, ok := n.Spent(c.key, c.r, c.cost); ok {
			l.nearHit(ctx)
			l.count(d, c.cost, false)
			return d, false, nil
		}
	}
	failOver := l.p.WhenStoreFails == FailOver
	if !failOver || !l.health.skip() {
		sent := l.since()
		d, err := l.decideIn(ctx, l.store, c)
		l.storeCall(ctx, "quota", sent, callFailed(ctx, err))
		if err == nil {
			l.health.answered(l)
			l.count(d, c.cost, false)
			return d, false, nil
		}
		// The Fallback decides unless ctx ended or the call was shed or
		// found the store full.
		err = l.storeErr(ctx, l.store, "quota", err)
		if !failOver || !isStoreError(err) || isShed(err) || isFull(err) {
			return store.Decision{}, false, err
		}
	}
	d, err := l.decideIn(ctx, l.p.Fallback, c)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return store.Decision{}, true, ctxErr
		}
		l.logStoreError("quota-fallback", err)
		return store.Decision{}, true, &storeError{op: "quota", err: err}
	}
	l.count(d, c.cost, true)
	return d, true, nil
}

// decideIn is one AllowN or AllowAll call to st, bounded by callCharge.
func (l *limiter) decideIn(ctx context.Context, st store.Store, c *quotaCall) (store.Decision, error) {
	var d store.Decision
	err := l.callCharge(ctx, st, c.cost, func(ctx context.Context) (err error) {
		q := st.(store.Quota) // servable checked it
		if c.limits == nil {
			d, err = q.AllowN(ctx, c.key, c.r, c.cost)
			return err
		}
		ds, err := q.AllowAll(ctx, c.limits, c.cost)
		if err == nil && len(ds) != len(c.limits) {
			err = fmt.Errorf("AllowAll gave %d decisions for %d limits", len(ds), len(c.limits))
		}
		if err == nil {
			c.out, d = ds, sum(ds)
		}
		return err
	})
	return d, err
}

// sum is the decision of several limits decided together.
func sum(ds []store.Decision) store.Decision {
	d := store.Decision{Allowed: true, Remaining: ds[0].Remaining}
	for _, x := range ds {
		d.Allowed = d.Allowed && x.Allowed
		d.Remaining = min(d.Remaining, x.Remaining)
		d.RetryAfter, d.ResetAfter = max(d.RetryAfter, x.RetryAfter), max(d.ResetAfter, x.ResetAfter)
	}
	return d
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
