package memstore

import (
	"context"
	"fmt"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// quota is the GCRA state of one quota key: its theoretical arrival time
// (TAT), in whole microseconds since Store.epoch. The entry expires at its
// TAT, when the quota is full again.
type quota struct {
	tat int64
	pol uint16
}

func (q quota) expiry() time.Duration { return time.Duration(q.tat) * time.Microsecond }
func (q quota) policy() uint16        { return q.pol }
func (q quota) size() int64           { return 1 }

// AllowN decides a request of cost against the GCRA quota r of key (see
// store.Quota), on the store's clock truncated to a microsecond, or to a
// millisecond when the emission interval is whole milliseconds, as the Redis
// stores decide. Quotas are kept apart from locks. Only an allowed charge
// of a key whose quota is full needs a new entry, which fails with ErrFull
// when it does not fit (see WithMaxKeys and WithPolicyShare); refusals,
// peeks (cost 0) and refunds (cost < 0) never do. It fails with
// store.ErrInvalid for an empty key or when r.Check(cost) fails, and with
// ctx.Err().
func (s *Store) AllowN(ctx context.Context, key string, r store.Rate, cost int) (store.Decision, error) {
	if err := ctx.Err(); err != nil {
		return store.Decision{}, err
	}
	if key == "" {
		return store.Decision{}, fmt.Errorf("%w: memstore: empty key", store.ErrInvalid)
	}
	if err := r.Check(cost); err != nil {
		return store.Decision{}, fmt.Errorf("memstore: %w", err)
	}
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	// Read under the lock, so that a key's decisions are made in the order
	// of their times, as the Redis script's are.
	now, _ := s.now(false)
	nowUS := int64(now / time.Microsecond)
	if t := int64(r.Interval() / time.Microsecond); t%1000 == 0 {
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
		sh.quotas.set(key, q)
	default:
		pol := sh.pols.id(key)
		if !sh.quotas.room(pol, 1, now) {
			return store.Decision{}, ErrFull
		}
		sh.quotas.set(key, quota{tat: newTAT, pol: pol})
	}
	return d, nil
}

// gcra decides a request of cost at now on a key whose TAT is tat (tat is
// now for a key without one), all in microseconds, and returns the decision
// and the TAT to keep. A refund (cost < 0) returns a TAT of at least now,
// now itself when it leaves the quota full: the caller then deletes the
// key. gcra.lua is the same algorithm, step for step, so that both stores
// give equal decisions.
func gcra(tat, now int64, r store.Rate, cost int) (store.Decision, int64) {
	t := int64(r.Interval() / time.Microsecond)
	tau := t * int64(r.Burst)
	tat = max(tat, now)
	// A refund gives back at most what makes the quota full.
	newTAT := max(tat+int64(cost)*t, now)
	// remaining is how many requests of cost 1 fit when the TAT is at.
	remaining := func(at int64) int {
		return int(max(tau-(at-now), 0) / t)
	}
	us := func(n int64) time.Duration { return time.Duration(n) * time.Microsecond }
	// A refund is allowed even on an overspent quota (see
	// store.Decision.Allowed): it only gives back.
	if cost >= 0 && newTAT-now > tau {
		return store.Decision{
			Remaining:  remaining(tat),
			RetryAfter: us(newTAT - tau - now),
			ResetAfter: us(tat - now),
		}, tat
	}
	return store.Decision{
		Allowed:    true,
		Remaining:  remaining(newTAT),
		ResetAfter: us(newTAT - now),
	}, newTAT
}
