package redisalgo

import (
	"context"
	"fmt"
	"strconv"

	"github.com/go-throttle/throttle/internal/redislua"
	"github.com/go-throttle/throttle/throttle/store"
)

// AllowN decides a request of cost against the GCRA quota r of key (see
// store.Quota) on the Redis server's clock, in one script: gcra_ms.lua,
// which keeps the TAT as the key's expiry, when the interval is a whole
// number of milliseconds, gcra.lua otherwise.
//
// While most charges find no key (new users), a charge on a
// whole-millisecond interval first sends SET key "" NX PX, what the script
// would do to a missing key at a third of its server time, and runs the
// script only when the key exists: a second round trip, so the store stops
// trying once about one charge in eight finds its key (BenchmarkQuotaPaired).
func (s *Store) AllowN(ctx context.Context, key string, r store.Rate, cost int) (store.Decision, error) {
	if key == "" {
		return store.Decision{}, s.check(key, "-", 1)
	}
	if err := r.Check(cost); err != nil {
		return store.Decision{}, fmt.Errorf("%s: %w", s.name, err)
	}
	gc := redislua.NewGCRACall(r, s.cfg.now)
	first := s.cfg.path == Set || s.cfg.path == Auto && !s.returning.Frequent()
	v, err := gc.Charge(cost, &s.returning, first,
		func(px int64) (bool, error) {
			set, _, _, err := s.conn.SetNX(ctx, key, "", px, false)
			return set, err
		},
		func() (int64, error) { return s.gcra(ctx, key, gc, r, cost) })
	if err != nil {
		return store.Decision{}, s.fail("quota", err, true)
	}
	return redislua.Decision(v, gc.T, int64(r.Burst), int64(cost)), nil
}

// gcra runs the GCRA script of gc on key and returns its reply.
func (s *Store) gcra(ctx context.Context, key string, gc redislua.GCRACall, r store.Rate, cost int) (int64, error) {
	sc := gcraScript
	if gc.Millis {
		sc = gcraMsScript
	}
	args := []string{strconv.FormatInt(gc.Interval, 10), strconv.Itoa(r.Burst), strconv.Itoa(cost)}
	if gc.Now != 0 {
		args = append(args, strconv.FormatInt(gc.Now, 10))
	}
	res, err := s.conn.Eval(ctx, sc, []string{key}, args...)
	if err == nil && len(res) != 1 {
		err = fmt.Errorf("unexpected script reply %v", res)
	}
	if err != nil {
		return 0, err
	}
	return res[0], nil
}
