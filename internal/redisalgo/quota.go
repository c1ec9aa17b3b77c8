package redisalgo

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

// AllowN decides a request of cost against the GCRA quota r of key on the
// server's clock, in one script (gcra_ms.lua for whole milliseconds, keeping
// the TAT as the key's expiry). While most charges find no key, gcra_ms's
// charge first tries SET key "" NX PX, what the script does to a new key.
// A refusal is remembered in the near cache with the rate it was decided
// under, and answers the next charges under that rate that it refuses.
func (s *Store) AllowN(ctx context.Context, key string, r store.Rate, cost int) (store.Decision, error) {
	if key == "" {
		return store.Decision{}, storekit.CheckLock(s.name, key, "-", 1)
	}
	if err := storekit.Check(r, cost); err != nil {
		return store.Decision{}, fmt.Errorf("%s: %w", s.name, err)
	}
	if d, ok := s.Spent(key, r, cost); ok {
		return d, nil
	}
	st := s.stamp(key)
	var d store.Decision
	var err error
	if r.Strict {
		d, err = s.allowStrict(ctx, key, r, cost)
	} else {
		d, err = s.allowN(ctx, key, r, cost)
	}
	switch {
	case err == nil && !d.Allowed && r.Strict:
		s.keepStrict(key, st, d, r, cost)
	case err == nil && !d.Allowed:
		s.keep(key, st, d.ResetAfter, r, "")
	case cost < 0: // a refund: this process's refusals of key are stale
		s.Forget(key)
	}
	return d, err
}

// allowN is AllowN without the near cache.
func (s *Store) allowN(ctx context.Context, key string, r store.Rate, cost int) (store.Decision, error) {
	ctx = charging(ctx, cost)
	t := int64(storekit.Interval(r) / time.Microsecond) // the scripts reply in µs
	sc, interval, args := s.gcraCall(t, r.Burst, cost)
	step := sc == gcraMsScript && s.cfg.now == nil && cost > 0
	newKey := int64(cost) * t // the reply for a key without time left
	if step && (s.cfg.path == "set" || s.cfg.path == "store" && !s.returning.Frequent()) {
		set, _, _, err := s.conn.SetNX(ctx, key, "", int64(cost)*interval, false)
		if err != nil {
			return store.Decision{}, s.fail("quota", err, true)
		}
		s.returning.Observe(!set)
		if set {
			return decision(newKey, t, int64(r.Burst), int64(cost)), nil
		}
	}
	res, err := s.conn.Eval(ctx, sc, []string{key}, args...)
	if err == nil && len(res) != 1 {
		err = fmt.Errorf("unexpected script reply %v", res)
	}
	if err != nil {
		return store.Decision{}, s.fail("quota", err, true)
	}
	if step {
		s.returning.Observe(res[0] != newKey)
	}
	return decision(res[0], t, int64(r.Burst), int64(cost)), nil
}

// gcraCall returns the script for an interval of t µs, the interval in its
// unit and its arguments (with the test clock's time, if any).
func (s *Store) gcraCall(t int64, burst, cost int) (*Script, int64, []string) {
	sc, interval := gcraScript, t
	if t%1000 == 0 {
		sc, interval = gcraMsScript, t/1000
	}
	args := []string{strconv.FormatInt(interval, 10), strconv.Itoa(burst), strconv.Itoa(cost)}
	if s.cfg.now != nil {
		now := s.cfg.now().UnixMicro()
		if sc == gcraMsScript {
			now = s.cfg.now().UnixMilli()
		}
		args = append(args, strconv.FormatInt(now, 10))
	}
	return sc, interval, args
}
