package memstore

import (
	"context"
	"fmt"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

var _ store.Quota = (*Store)(nil)

// quota is the GCRA state of one quota key: its theoretical arrival time
// (TAT), in whole microseconds since Store.epoch. The entry expires at its
// TAT, when the quota is full again. pol is its key's policy (see
// policy.go).
type quota struct {
	tat int64
	pol uint16
}

func (q quota) expiry() time.Duration { return time.Duration(q.tat) * time.Microsecond }

// AllowN decides a request of cost against the GCRA quota r of key (see
// store.Quota and store.Rate), with the store's clock (WithClock) read once
// and truncated to a whole microsecond, or to a whole millisecond when the
// emission interval (Window / Limit) is one, as the Redis stores decide. Quota keys live in their own map,
// apart from locks: the same key may be a lock and a quota. An allowed
// request of positive cost on a key whose quota is full (no live entry)
// needs a new entry: in a full shard (WithMaxKeys, counted apart from
// locks and fence counters), or one where the key's policy holds its share
// of the quotas (WithPolicyShare), it first removes the shard's expired
// quotas and, when that is not enough, fails with ErrFull. Refused requests and peeks
// (cost 0) never write. A refund (negative cost) lowers the TAT of a live
// entry, or deletes the entry when it leaves the quota full, and writes
// nothing on a key without one: it never needs a new entry, so it never
// fails with ErrFull. AllowN fails with an error matching store.ErrInvalid
// when key is empty or r.Check(cost) fails, and with ctx.Err() when ctx is
// done.
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
	// The clock is read under the lock, so that decisions on a key are
	// made in the order of their times, as the Redis script's are: a
	// decision that read an earlier time than the one before it would
	// see less of the quota refilled.
	now, _ := s.now(false)
	nowUS := int64(now / time.Microsecond)
	if t := int64(r.Interval() / time.Microsecond); t%1000 == 0 {
		// An interval of whole milliseconds is decided on a clock of
		// whole milliseconds, as the Redis stores' script does (it keeps
		// the TAT as the key's expiry): both stores decide exactly alike.
		// Nothing is lost: every TAT is then a whole millisecond too.
		nowUS -= nowUS % 1000
	}

	// An expired entry (its quota full again) still holds a place in the
	// map: a returning user's charge reuses it, which spares the sampling
	// for expired entries that a new entry pays for.
	q, present := sh.quotas[key]
	live := present && q.tat > nowUS
	tat := nowUS
	if live {
		tat = q.tat
	}
	d, newTAT := gcra(tat, nowUS, r, cost)
	if !d.Allowed || newTAT == tat {
		if present && !live {
			sh.dropQuota(key, q)
		}
		return d, nil
	}
	if newTAT <= nowUS {
		// A refund filled the quota again: drop the entry, as expiry
		// would. (newTAT is now and differs from tat, so the entry was
		// live.)
		sh.dropQuota(key, q)
		return d, nil
	}
	if !present {
		pol := sh.pols.id(key)
		fits := func() bool {
			return len(sh.quotas) < sh.capacity && sh.quotaPols.get(pol) < sh.policyCap
		}
		if !makeRoom(sh.quotas, fits, &sh.quotaFloor, now, sh.dropQuota, sampleSize) {
			return store.Decision{}, ErrFull
		}
		q = quota{pol: pol}
		sh.quotaPols.add(pol, 1)
	}
	q.tat = newTAT
	sh.quotas[key] = q
	sh.quotaFloor = min(sh.quotaFloor, q.expiry())
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

// dropQuota removes key's quota q.
func (sh *shard) dropQuota(key string, q quota) {
	delete(sh.quotas, key)
	sh.quotaPols.add(q.pol, -1)
}
