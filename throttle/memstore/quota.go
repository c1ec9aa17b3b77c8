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

// AllowN decides a request of cost against the quota r of key, as the Redis
// stores do (see store.Quota); a new entry that does not fit fails.
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
	now, _ := s.now(false) // under the lock: decisions in the order of their times
	nowUS := int64(now / time.Microsecond)
	if t := int64(storekit.Interval(r) / time.Microsecond); t%1000 == 0 {
		nowUS -= nowUS % 1000 // the Redis stores keep the TAT as a PX expiry
	}
	// An expired entry, its quota full again, is reused by a charge.
	q, present := sh.quotas.m[key]
	tat := max(q.tat, nowUS)
	d, newTAT := storekit.Decide(tat, nowUS, r, cost)
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
			return store.Decision{}, errFull
		}
		sh.quotas.put(key, quota{tat: newTAT, pol: pol}, true)
	}
	return d, nil
}
