package redisalgo

import (
	"context"
	"fmt"
	"strconv"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

// AllowAll decides cost against every limit as one decision, charging all
// or none (see store.Quota), in one script (gcra_all.lua) over all the keys,
// which share a hash tag and so a Cluster slot.
func (s *Store) AllowAll(ctx context.Context, limits []store.Limit, cost int) ([]store.Decision, error) {
	if err := storekit.CheckLimits(limits, cost); err != nil {
		return nil, fmt.Errorf("%s: %w", s.name, err)
	}
	keys := make([]string, len(limits))
	args := make([]string, 2, 2+2*len(limits))
	args[0] = strconv.Itoa(cost)
	if s.cfg.now != nil {
		args[1] = strconv.FormatInt(s.cfg.now().UnixMicro(), 10)
	}
	for i, l := range limits {
		keys[i] = l.Key
		args = append(args, strconv.FormatInt(allInterval(l.Rate), 10), strconv.Itoa(l.Rate.Burst))
	}
	res, err := s.conn.Eval(charging(ctx, cost), gcraAllScript, keys, args...)
	var ds []store.Decision
	if err == nil {
		ds, err = allDecisions(res, limits, cost)
	}
	if err != nil {
		return nil, s.fail("quota", err, true)
	}
	return ds, nil
}

// Delete removes keys whoever holds them (see store.Store): each key with
// its record, in one script per key (keys of different hash tags may live
// on different Cluster nodes), publishing on the key's channel as Release
// does. The fencing counters stay.
func (s *Store) Delete(ctx context.Context, keys ...string) error {
	for _, key := range keys {
		if key == "" {
			return storekit.CheckLock(s.name, key, "-", 1)
		}
	}
	for i, key := range keys {
		_, err := s.conn.Eval(ctx, deleteScript, []string{key, storekit.RecordKey(key)}, channel(key))
		s.Forget(key)
		if err != nil {
			return s.fail("delete", err, i == 0)
		}
	}
	return nil
}
