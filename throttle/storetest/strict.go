package storetest

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle/store"
)

// strictRate is a strict quota of limit per hour: no admission leaves its
// window during a check.
func strictRate(limit int) store.Rate {
	return store.Rate{Limit: limit, Window: time.Hour, Burst: limit, Strict: true}
}

// strictQuota returns s as a store.Quota, or skips the check when s refuses
// strict rates, as store.Quota lets it, in AllowN and AllowAll alike.
func strictQuota(t *testing.T, s store.Store) store.Quota {
	q := as[store.Quota](t, s)
	_, err := q.AllowN(bg, newKey("strict-probe"), strictRate(1), 0)
	if errors.Is(err, store.ErrInvalid) {
		_, err = q.AllowAll(bg, []store.Limit{{Key: newKey("strict-probe"), Rate: strictRate(1)}}, 0)
		require.ErrorIs(t, err, store.ErrInvalid, "AllowAll of a strict rate that AllowN refuses")
		t.Skipf("%T refuses strict rates", s)
	}
	require.NoError(t, err, "a peek under a strict rate")
	return q
}

// allowN fails the test unless AllowN answers, and returns its decision.
func allowN(t testing.TB, q store.Quota, key string, r store.Rate, cost int) store.Decision {
	t.Helper()
	d, err := q.AllowN(bg, key, r, cost)
	require.NoError(t, err, "AllowN(%q, %+v, %d)", key, r, cost)
	return d
}

// inWindow fails the test unless d, a time until an admission of this
// check leaves the hour's window, is within patience below an hour.
func inWindow(t testing.TB, d time.Duration, what string) {
	t.Helper()
	require.True(t, d <= time.Hour && d > time.Hour-patience, "%s: %v, want just below an hour", what, d)
}

// testStrict: a strict quota of 5 allows exactly 5 in its window, each
// decision's Remaining counting down and its RefillAfter and ResetAfter the
// window from the first and last admission; the 6th is refused until the
// first leaves (RetryAfter, RefillAfter); a peek of the spent quota is
// allowed; a refund gives back, never past full; a cost of n needs n free;
// a strict rate whose Burst is not its Limit, or whose Limit is above
// 10,000, is invalid; Delete empties the log.
func testStrict(t *testing.T, s store.Store) {
	q := strictQuota(t, s)
	key, r := newKey("strict"), strictRate(5)
	for i := range 5 {
		d := allowN(t, q, key, r, 1)
		require.True(t, d.Allowed && d.Remaining == 4-i && d.RetryAfter == 0, "charge %d: %+v", i, d)
		inWindow(t, d.ResetAfter, "ResetAfter")
		inWindow(t, d.RefillAfter, "RefillAfter")
		require.LessOrEqual(t, d.RefillAfter, d.ResetAfter, "charge %d: the oldest leaves first: %+v", i, d)
	}
	d := allowN(t, q, key, r, 1)
	require.True(t, !d.Allowed && d.Remaining == 0, "the 6th: %+v", d)
	inWindow(t, d.RetryAfter, "the 6th's RetryAfter")
	require.Equal(t, d.RefillAfter, d.RetryAfter, "the 6th: fits when the first leaves: %+v", d)
	d = allowN(t, q, key, r, 0)
	require.True(t, d.Allowed && d.Remaining == 0 && d.RetryAfter == 0, "a peek at the spent quota: %+v", d)
	d = allowN(t, q, key, r, -2)
	require.True(t, d.Allowed && d.Remaining == 2, "a refund of 2: %+v", d)
	d = allowN(t, q, key, r, 2)
	require.True(t, d.Allowed && d.Remaining == 0, "a charge of 2 after the refund: %+v", d)
	require.False(t, allowN(t, q, key, r, 1).Allowed, "a charge of 1 after the refund's room was spent")
	d = allowN(t, q, key, r, -5)
	require.Equal(t, store.Decision{Allowed: true, Remaining: 5}, d, "a refund of everything")
	require.Equal(t, store.Decision{Allowed: true, Remaining: 5}, allowN(t, q, key, r, -1), "a refund past full")

	key = newKey("strict-cost")
	require.Equal(t, 2, allowN(t, q, key, r, 3).Remaining, "a charge of 3")
	d = allowN(t, q, key, r, 3)
	require.True(t, !d.Allowed && d.Remaining == 2, "a charge of 3 with 2 left: %+v", d)
	inWindow(t, d.RetryAfter, "its RetryAfter")
	require.True(t, allowN(t, q, key, r, 2).Allowed, "a charge of 2 with 2 left")
	mustDelete(t, s, key)
	require.Equal(t, store.Decision{Allowed: true, Remaining: 5}, allowN(t, q, key, r, 0), "a peek after Delete")

	for name, c := range map[string]struct {
		r    store.Rate
		cost int
	}{
		"a burst below the limit": {store.Rate{Limit: 5, Window: time.Hour, Burst: 4, Strict: true}, 1},
		"a limit above 10,000":    {strictRate(10001), 1},
		"a cost above the limit":  {r, 6},
		"a refund above it":       {r, -6},
	} {
		_, err := q.AllowN(bg, key, c.r, c.cost)
		require.ErrorIs(t, err, store.ErrInvalid, "AllowN with %s", name)
		_, err = q.AllowAll(bg, []store.Limit{{Key: key, Rate: c.r}}, c.cost)
		require.ErrorIs(t, err, store.ErrInvalid, "AllowAll with %s", name)
	}
	key = newKey("strict-max")
	d = allowN(t, q, key, strictRate(10000), 10000)
	require.True(t, d.Allowed && d.Remaining == 0, "a charge of 10,000 under the largest limit: %+v", d)
	require.False(t, allowN(t, q, key, strictRate(10000), 1).Allowed, "one more under the largest limit")
}

// testStrictAllowAll: a strict and a smooth limit decided as one charge
// both or neither: the strict limit's refusal leaves the smooth quota as
// it was, its decision not Allowed with no wait, and the smooth one's
// refusal leaves the strict log as it was; a peek and a refund go to both;
// over one strict limit AllowAll decides as AllowN does.
func testStrictAllowAll(t *testing.T, s store.Store) {
	q := strictQuota(t, s)
	keys := quotaKeys("strict-all", 4)
	limits := []store.Limit{{Key: keys[0], Rate: strictRate(2)}, {Key: keys[1], Rate: hourly(3)}}
	for i, want := range [][2]int{{1, 2}, {0, 1}} {
		ds := allowAll(t, q, limits, 1)
		require.True(t, ds[0].Allowed && ds[1].Allowed, "charge %d: %+v", i, ds)
		require.Equal(t, want, [2]int{ds[0].Remaining, ds[1].Remaining}, "charge %d: %+v", i, ds)
	}
	ds := allowAll(t, q, limits, 1)
	require.True(t, !ds[0].Allowed && ds[0].Remaining == 0, "the strict limit, spent: %+v", ds[0])
	inWindow(t, ds[0].RetryAfter, "the strict limit's RetryAfter")
	require.True(t, !ds[1].Allowed && ds[1].Remaining == 1 && ds[1].RetryAfter == 0, "the smooth limit, refused by the strict one: %+v", ds[1])
	mustRemain(t, q, keys[1], hourly(3), 1)
	ds = allowAll(t, q, limits, 0)
	require.True(t, ds[0].Allowed && ds[1].Allowed, "a peek: %+v", ds)
	ds = allowAll(t, q, limits, -1)
	require.True(t, ds[0].Allowed && ds[1].Allowed, "a refund: %+v", ds)
	require.Equal(t, [2]int{1, 2}, [2]int{ds[0].Remaining, ds[1].Remaining}, "a refund: %+v", ds)

	limits = []store.Limit{{Key: keys[2], Rate: hourly(1)}, {Key: keys[3], Rate: strictRate(5)}}
	allowAll(t, q, limits, 1)
	ds = allowAll(t, q, limits, 1)
	require.True(t, !ds[0].Allowed && ds[0].RetryAfter > 0, "the smooth limit, spent: %+v", ds[0])
	require.True(t, !ds[1].Allowed && ds[1].Remaining == 4 && ds[1].RetryAfter == 0, "the strict limit, refused by the smooth one: %+v", ds[1])
	require.Equal(t, 4, allowN(t, q, keys[3], strictRate(5), 0).Remaining, "the strict log after the refusal")

	keys = quotaKeys("strict-all-one", 2)
	r := strictRate(4)
	for i, cost := range []int{1, 2, 0, 2, 1, -1, 0, -4, 3} {
		want := allowN(t, q, keys[0], r, cost)
		got := allowAll(t, q, []store.Limit{{Key: keys[1], Rate: r}}, cost)[0]
		require.True(t, got.Allowed == want.Allowed && got.Remaining == want.Remaining,
			"step %d, cost %d: AllowAll %+v, AllowN %+v", i, cost, got, want)
		for _, d := range [][2]time.Duration{{got.RetryAfter, want.RetryAfter}, {got.ResetAfter, want.ResetAfter}, {got.RefillAfter, want.RefillAfter}} {
			require.InDelta(t, d[1], d[0], float64(time.Second), "step %d, cost %d: AllowAll %+v, AllowN %+v", i, cost, got, want)
		}
	}
}

// testStrictRace: goroutines charging a strict quota at once get exactly
// its limit, alone and stacked on a larger smooth one, whose refusals
// charge nothing.
func testStrictRace(t *testing.T, s store.Store) {
	q := strictQuota(t, s)
	key := newKey("strict-race")
	var allowed atomic.Int64
	require.NoError(t, race(8, 10, func() error {
		d, err := q.AllowN(bg, key, strictRate(20), 1)
		if err == nil && d.Allowed {
			allowed.Add(1)
		}
		return err
	}))
	require.EqualValues(t, 20, allowed.Load(), "allowed of 80")

	keys := quotaKeys("strict-race-all", 2)
	limits := []store.Limit{{Key: keys[0], Rate: hourly(30)}, {Key: keys[1], Rate: strictRate(20)}}
	allowed.Store(0)
	require.NoError(t, race(8, 10, func() error {
		ds, err := q.AllowAll(bg, limits, 1)
		if err == nil && ds[0].Allowed != ds[1].Allowed {
			t.Errorf("decisions disagree: %+v", ds)
		}
		if err == nil && ds[0].Allowed {
			allowed.Add(1)
		}
		return err
	}))
	require.EqualValues(t, 20, allowed.Load(), "allowed of 80, stacked")
	mustRemain(t, q, keys[0], limits[0].Rate, 10)
	mustRemain(t, q, keys[1], limits[1].Rate, 0)
}
