package throttle_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/redisalgo"
	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/rueidisstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// newTestClock returns a clock that moves only when told, for a store and
// its test; in the future, so that Redis never expires a key the test
// clock still counts (expiries under a test clock are times: PXAT).
func newTestClock() *fakeClock {
	return &fakeClock{now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
}

// clockedStore returns the store named name (memstore, redisstore or
// rueidisstore, on a Redis server of its own) deciding quotas on clock.
func clockedStore(t *testing.T, name string, clock *fakeClock) store.Store {
	t.Helper()
	if name == "memstore" {
		return memstore.New(memstore.WithClock(clock.Now))
	}
	srv := redistest.Start(t)
	if name == "redisstore" {
		rdb := newClient(srv.Addr)
		t.Cleanup(func() { _ = rdb.Close() })
		s := redisstore.New(rdb, redisalgo.WithClock(clock.Now))
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, DisableCache: true})
	require.NoError(t, err, "rueidis client")
	t.Cleanup(rc.Close)
	s := rueidisstore.New(rc, redisalgo.WithClock(clock.Now))
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// decideTimeout is the store timeout of the quota tests that check
// decisions against a real Redis: replies on a loaded machine (load 11 to
// 18 on two cores) came later than the default 100 ms, and a charge whose
// reply comes too late is shed (it may have counted), which these tests
// would take for a wrong decision. Timing is not what they test. Not
// longer: the store's monitor ticks every quarter of it while calls are
// in flight, and one still ticking when the tests end is a leak to goleak.
const decideTimeout = time.Second

// eachClocked runs f once per store that decides quotas on a test clock
// (under -short, memstore alone), each with a Quota on a clock of its own.
func eachClocked(t *testing.T, f func(t *testing.T, q *throttle.Quota, clock *fakeClock)) {
	names := []string{"memstore", "redisstore", "rueidisstore"}
	if testing.Short() {
		names = names[:1]
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			clock := newTestClock()
			q := newQuota(t, clockedStore(t, name, clock), throttle.QuotaConfig{Name: "strict",
				Options: throttle.Options{Timeout: decideTimeout}})
			f(t, q, clock)
		})
	}
}

// strictModel decides a strict rate the slow way, as its docs say: a log of
// admitted units, a request allowed when the units of the last Window with
// its cost are at most Limit, and every time found by trying the moments
// the units leave. Refunds drop the oldest units.
type strictModel struct{ log []time.Duration }

// inWindow returns the units in the Window that ends at now.
func (m *strictModel) inWindow(now, window time.Duration) []time.Duration {
	var in []time.Duration
	for _, a := range m.log {
		if a > now-window {
			in = append(in, a)
		}
	}
	return in
}

// first returns the least wait among the moments the units leave after
// which ok holds, or 0 when none is needed (or none helps).
func (m *strictModel) first(now, window time.Duration, ok func(used int) bool) time.Duration {
	if ok(len(m.inWindow(now, window))) {
		return 0
	}
	for _, a := range m.log {
		if wait := a + window - now; wait > 0 && ok(len(m.inWindow(now+wait, window))) {
			return wait
		}
	}
	return 0
}

func (m *strictModel) decide(now time.Duration, r throttle.Rate, cost int) store.Decision {
	m.log = m.inWindow(now, r.Window)
	used := len(m.log)
	allowed := cost < 0 || used+cost <= r.Limit
	switch {
	case allowed && cost > 0:
		for range cost {
			m.log = append(m.log, now)
		}
	case cost < 0:
		m.log = m.log[min(-cost, used):]
	}
	used = len(m.log)
	rem := max(r.Limit-used, 0)
	d := store.Decision{Allowed: allowed, Remaining: rem,
		ResetAfter:  m.first(now, r.Window, func(u int) bool { return u == 0 }),
		RefillAfter: m.first(now, r.Window, func(u int) bool { return r.Limit-u > rem })}
	if !allowed {
		d.RetryAfter = m.first(now, r.Window, func(u int) bool { return u+cost <= r.Limit })
	}
	return d
}

// TestStrictModel walks every store through random charges, peeks and
// refunds under a strict rate whose Limit changes now and then (a plan's),
// at random times, and checks each decision against strictModel's, field
// for field, to the microsecond.
func TestStrictModel(t *testing.T) {
	eachClocked(t, func(t *testing.T, q *throttle.Quota, clock *fakeClock) {
		rng := rand.New(rand.NewPCG(7, 8))
		var m strictModel
		start := clock.Now()
		r := throttle.Rate{Limit: 5, Window: 10 * time.Second, Strict: true}
		for i := range 600 {
			if rng.IntN(40) == 0 {
				r.Limit = []int{2, 5, 8}[rng.IntN(3)]
			}
			clock.Advance(time.Duration(rng.Int64N(int64(3*time.Second/time.Microsecond))) * time.Microsecond)
			cost := rng.IntN(r.Limit+2) - 1 // -1 to Limit
			if rng.IntN(10) == 0 {
				cost = -rng.IntN(r.Limit) - 1
			}
			got, err := q.Allow(context.Background(), "u", r, cost)
			require.NoError(t, err, "step %d", i)
			want := m.decide(clock.Now().Sub(start), r, cost)
			require.Equal(t, want, got, "step %d: cost %d under a limit of %d", i, cost, r.Limit)
		}
	})
}

// TestStrictBoundary: a client sending a request every 100 ms for three
// windows of a strict "10 per minute" gets exactly 10 in each minute and
// never more than 10 in any minute, wherever it starts, and every refusal
// says when the next one fits, to the microsecond; under the smooth rate
// of the same numbers it gets 19 in the first minute (Burst + Limit - 1,
// as Rate's doc says) and never more in any minute.
func TestStrictBoundary(t *testing.T) {
	eachClocked(t, func(t *testing.T, q *throttle.Quota, clock *fakeClock) {
		ctx := context.Background()
		for _, strict := range []bool{true, false} {
			r := throttle.Rate{Name: "minute", Limit: 10, Window: time.Minute, Strict: strict}
			tick := 100 * time.Millisecond
			var admitted []time.Duration
			for at := time.Duration(0); at < 3*r.Window; at += tick {
				d, err := q.Allow(ctx, "hammer", r, 1)
				require.NoError(t, err)
				if d.Allowed {
					admitted = append(admitted, at)
				} else if strict {
					// The refusal's wait ends when the oldest admission in the window leaves it.
					in := slices.DeleteFunc(slices.Clone(admitted), func(a time.Duration) bool { return a <= at-r.Window })
					require.Equal(t, in[0]+r.Window-at, d.RetryAfter, "refusal at %v", at)
					require.Equal(t, d.RetryAfter, d.RefillAfter, "refusal at %v", at)
				}
				clock.Advance(tick)
			}
			most := 0
			for _, a := range admitted {
				n := 0
				for _, b := range admitted {
					if b >= a && b < a+r.Window {
						n++
					}
				}
				most = max(most, n)
			}
			perWindow := make([]int, 3)
			for _, a := range admitted {
				perWindow[a/r.Window]++
			}
			if strict {
				require.Equal(t, []int{10, 10, 10}, perWindow, "strict: admitted in each minute")
				require.Equal(t, 10, most, "strict: the most admitted in any minute")
			} else {
				require.Equal(t, 19, perWindow[0], "smooth: admitted in the first minute")
				require.Equal(t, 19, most, "smooth: the most admitted in any minute")
			}
		}
	})
}

// TestStrictStacked: a strict and a smooth rate decided as one charge both
// or neither: a refusal by either charges neither, and its wait is when
// the cost fits both; a refund gives back to both; Reset empties both.
func TestStrictStacked(t *testing.T) {
	eachClocked(t, func(t *testing.T, q *throttle.Quota, clock *fakeClock) {
		ctx := context.Background()
		strict := throttle.Rate{Name: "strict-3", Limit: 3, Window: 10 * time.Second, Strict: true}
		smooth := throttle.Rate{Name: "smooth-4", Limit: 4, Window: time.Minute} // one every 15 s
		rates := []throttle.Rate{strict, smooth}
		allowAll := func(cost int) []store.Decision {
			t.Helper()
			ds, err := q.AllowAll(ctx, "u", rates, cost)
			require.NoError(t, err)
			return ds
		}
		for i := range 3 {
			ds := allowAll(1)
			require.True(t, ds[0].Allowed && ds[1].Allowed, "charge %d: %+v", i, ds)
			clock.Advance(time.Second)
		}
		ds := allowAll(1) // at 3 s: the strict rate is spent until 10 s
		require.Equal(t, store.Decision{RetryAfter: 7 * time.Second, ResetAfter: 9 * time.Second,
			RefillAfter: 7 * time.Second}, ds[0], "the strict rate, spent")
		require.True(t, !ds[1].Allowed && ds[1].Remaining == 1 && ds[1].RetryAfter == 0, "the smooth rate, not charged: %+v", ds[1])
		clock.Advance(7 * time.Second)
		// At 10 s the first strict admission left: 2 fit neither rate, the
		// strict one in 1 s, the smooth one in 5 s.
		ds, err := q.AdmitAll(ctx, "u", rates, 2)
		var ce *throttle.ContendedError
		require.ErrorAs(t, err, &ce, "a charge of 2 at 10 s")
		require.Equal(t, 5*time.Second, ce.RetryAfter, "a charge of 2 at 10 s: %+v", ds)
		require.True(t, ds[0].Remaining == 1 && ds[0].RetryAfter == time.Second, "a charge of 2, the strict rate: %+v", ds[0])
		ds = allowAll(1)
		require.True(t, ds[0].Allowed && ds[1].Allowed && ds[0].Remaining == 0 && ds[1].Remaining == 0, "at 10 s: %+v", ds)
		clock.Advance(2 * time.Second)
		ds = allowAll(1) // at 12 s: the strict rate has room, the smooth one none until 15 s
		require.True(t, !ds[0].Allowed && ds[0].RetryAfter == 0 && ds[0].Remaining == 2, "the strict rate, refused by the smooth one: %+v", ds[0])
		require.True(t, !ds[1].Allowed && ds[1].RetryAfter == 3*time.Second, "the smooth rate, spent: %+v", ds[1])
		ds = allowAll(-1)
		require.True(t, ds[0].Allowed && ds[0].Remaining == 3 && ds[1].Remaining == 1, "a refund to both: %+v", ds)
		ds = allowAll(1)
		require.True(t, ds[0].Allowed && ds[0].Remaining == 2, "after the refund: %+v", ds)

		require.NoError(t, q.Reset(ctx, "u", strict, smooth))
		ds = allowAll(0)
		require.True(t, ds[0].Remaining == 3 && ds[1].Remaining == 4, "after Reset: %+v", ds)
		_, err = q.AllowAll(ctx, "u", []throttle.Rate{strict, {Name: "strict-3", Limit: 1, Window: time.Second}}, 1)
		require.ErrorIs(t, err, store.ErrInvalid, "a strict and a smooth rate of one name")
	})
}

// TestStrictPlanChange: the log of a strict rate carries over when the
// plan changes its Limit (an upgrade gets the difference at once, a
// downgrade waits until enough admissions leave); turning the rate smooth
// or strict starts that form afresh; Reset of the plain rate clears it.
func TestStrictPlanChange(t *testing.T) {
	eachClocked(t, func(t *testing.T, q *throttle.Quota, clock *fakeClock) {
		ctx := context.Background()
		free := throttle.Rate{Limit: 3, Window: time.Minute, Strict: true}
		pro := throttle.Rate{Limit: 10, Window: time.Minute, Strict: true}
		allow := func(r throttle.Rate, cost int) store.Decision {
			t.Helper()
			d, err := q.Allow(ctx, "u", r, cost)
			require.NoError(t, err)
			return d
		}
		for range 3 {
			require.True(t, allow(free, 1).Allowed)
			clock.Advance(time.Second)
		}
		require.False(t, allow(free, 1).Allowed, "the free plan, spent")
		clock.Advance(time.Second)
		d := allow(pro, 4) // at 4 s
		require.True(t, d.Allowed && d.Remaining == 3, "the upgrade: 7 more: %+v", d)
		clock.Advance(time.Second)
		require.Equal(t, 1, allow(pro, 2).Remaining, "at 5 s")
		clock.Advance(time.Second)
		// At 6 s, 9 admitted: one fits the free plan once 7 leave, the
		// last of them one of those at 4 s.
		d = allow(free, 1)
		require.Equal(t, store.Decision{RetryAfter: 58 * time.Second, ResetAfter: 59 * time.Second,
			RefillAfter: 58 * time.Second}, d, "the downgrade")
		smooth := free
		smooth.Strict = false
		require.True(t, allow(smooth, 3).Allowed, "the smooth form of the rate, afresh")
		require.NoError(t, q.Reset(ctx, "u"))
		require.Equal(t, 3, allow(free, 0).Remaining, "the strict form after Reset")
		require.Equal(t, 3, allow(smooth, 0).Remaining, "the smooth form after Reset")
		_, err := q.Allow(ctx, "u", throttle.Rate{Limit: 3, Window: time.Minute, Burst: 2, Strict: true}, 1)
		require.ErrorIs(t, err, store.ErrInvalid, "a strict rate whose Burst is not its Limit")
		_, err = q.Allow(ctx, "u", throttle.Rate{Limit: 10001, Window: time.Hour, Strict: true}, 1)
		require.ErrorIs(t, err, store.ErrInvalid, "a strict rate above 10,000")
	})
}
