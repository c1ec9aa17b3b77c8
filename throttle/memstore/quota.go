package memstore

import (
	"context"
	"fmt"
	"time"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

// quota is a key's GCRA TAT in microseconds since Store.epoch, its expiry.
type quota struct {
	tat int64
	pol uint16
}

func (q quota) expiry() time.Duration { return time.Duration(q.tat) * time.Microsecond }
func (q quota) policy() uint16        { return q.pol }
func (q quota) size() int64           { return 1 }

// AllowN decides a request of cost against the GCRA quota r of key (see
// store.Quota) as the Redis stores do, on a clock of whole microseconds, or
// milliseconds when the emission interval is. Quotas are kept apart from
// locks. Only an allowed charge of a full quota needs a new entry, which
// fails with ErrFull when it does not fit; refusals, peeks (cost 0) and
// refunds (cost < 0) never do. It fails with store.ErrInvalid for an empty
// key or when storekit.Check(r, cost) fails, and with ctx.Err().
func (s *Store) AllowN(ctx context.Context, key string, r store.Rate, cost int) (store.Decision, error) {
	if err := ctx.Err(); err != nil {
		return store.Decision{}, err
	}
	if key == "" {
		return store.Decision{}, fmt.Errorf("%w: memstore: empty key", store.ErrInvalid)
	}
	if err := storekit.Check(r, cost); err != nil {
		return store.Decision{}, fmt.Errorf("memstore: %w", err)
	}
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	// Read under the lock, so that a key's decisions are made in the order
	// of their times, as the Redis script's are.
	now, _ := s.now(false)
	nowUS := int64(now / time.Microsecond)
	if t := int64(storekit.Interval(r) / time.Microsecond); t%1000 == 0 {
		nowUS -= nowUS % 1000 // the Redis stores keep the TAT as a PX expiry
	}
	// An expired entry, its quota full again, is reused by a charge.
	q, present := sh.quotas.m[key]
	tat := max(q.tat, nowUS)
	d, newTAT := gcra(tat, nowUS, r, cost)
	switch {
	case !d.Allowed || newTAT == tat:
		if present && q.tat <= nowUS {
			sh.quotas.drop(key, q)
		}
	case newTAT <= nowUS: // a refund filled the quota again
		sh.quotas.drop(key, q)
	case present:
		q.tat = newTAT
		sh.quotas.put(key, q, false)
	default:
		pol := sh.pols.id(key)
		if !sh.quotas.room(pol, 1, now) {
			return store.Decision{}, ErrFull
		}
		sh.quotas.put(key, quota{tat: newTAT, pol: pol}, true)
	}
	return d, nil
}

// gcra decides a request of cost at now on a key whose TAT is tat, in
// microseconds, and returns the decision and the TAT to keep (now when a
// refund leaves the quota full). It is gcra.lua step for step, so that the
// stores decide alike.
func gcra(tat, now int64, r store.Rate, cost int) (store.Decision, int64) {
	t := int64(storekit.Interval(r) / time.Microsecond)
	tau := t * int64(r.Burst)
	tat = max(tat, now)
	newTAT := max(tat+int64(cost)*t, now) // a refund fills the quota at most
	remaining := func(at int64) int { return int(max(tau-(at-now), 0) / t) }
	us := func(n int64) time.Duration { return time.Duration(n) * time.Microsecond }
	// A refund is allowed even on an overspent quota: it only gives back.
	if cost >= 0 && newTAT-now > tau {
		return store.Decision{Remaining: remaining(tat), RetryAfter: us(newTAT - tau - now), ResetAfter: us(tat - now)}, tat
	}
	return store.Decision{Allowed: true, Remaining: remaining(newTAT), ResetAfter: us(newTAT - now)}, newTAT
}
