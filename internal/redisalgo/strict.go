package redisalgo

import (
	"context"
	"fmt"
	"time"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

// allowStrict is AllowN for a strict rate (checked): gcra_all.lua, whose
// strict.lua part keeps the key's log, on the one key. The near cache
// keeps none of its refusals: when a log frees room depends on its
// entries, not on the rate alone.
func (s *Store) allowStrict(ctx context.Context, key string, r store.Rate, cost int) (store.Decision, error) {
	ds, err := s.AllowAll(ctx, []store.Limit{{Key: key, Rate: r}}, cost)
	if err != nil {
		return store.Decision{}, err
	}
	return ds[0], nil
}

// allInterval is a limit's interval argument of gcra_all.lua: T in µs, or,
// for a strict rate, minus its window in µs.
func allInterval(r store.Rate) int64 {
	if r.Strict {
		return -int64(r.Window / time.Microsecond)
	}
	return int64(storekit.Interval(r) / time.Microsecond)
}

// allDecisions decodes gcra_all.lua's reply res: one integer per smooth
// limit (see decision), four per strict one (see strict.lua).
func allDecisions(res []int64, limits []store.Limit, cost int) ([]store.Decision, error) {
	ds := make([]store.Decision, len(limits))
	us := func(n int64) time.Duration { return time.Duration(n) * time.Microsecond }
	k := 0
	for i, l := range limits {
		n := 1
		if l.Rate.Strict {
			n = 4
		}
		if k+n > len(res) {
			return nil, fmt.Errorf("unexpected script reply %v", res)
		}
		v := res[k : k+n]
		k += n
		if !l.Rate.Strict {
			t := int64(storekit.Interval(l.Rate) / time.Microsecond)
			ds[i] = decision(v[0], t, int64(l.Rate.Burst), int64(cost))
			ds[i].RetryAfter = max(ds[i].RetryAfter, 0) // a limit that allows, refused by another
			continue
		}
		reset := v[0]
		if v[0] < 0 {
			reset = -v[0] - 1
		}
		ds[i] = store.Decision{Allowed: v[0] >= 0, Remaining: int(v[1]), ResetAfter: us(reset),
			RefillAfter: us(v[2]), RetryAfter: us(v[3])}
	}
	if k != len(res) {
		return nil, fmt.Errorf("unexpected script reply %v", res)
	}
	return ds, nil
}
