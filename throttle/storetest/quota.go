package storetest

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

// hourly is a quota of burst requests refilled one every 36 s, so that a
// check's own time refills none.
func hourly(burst int) store.Rate { return store.Rate{Limit: 100, Window: time.Hour, Burst: burst} }

// quotaKeys returns n fresh quota keys sharing one hash tag, as a limiter
// builds them: the first the tag's own key, the others below it.
func quotaKeys(name string, n int) []string {
	base := newKey(name)
	keys := []string{base}
	for i := 1; i < n; i++ {
		keys = append(keys, base+":"+strconv.Itoa(i))
	}
	return keys
}

// allowAll fails the test unless AllowAll answers, and returns its decisions.
func allowAll(t testing.TB, q store.Quota, limits []store.Limit, cost int) []store.Decision {
	t.Helper()
	ds, err := q.AllowAll(bg, limits, cost)
	require.NoError(t, err, "AllowAll(%+v, %d)", limits, cost)
	require.Len(t, ds, len(limits), "AllowAll(%+v, %d) decisions", limits, cost)
	return ds
}

// mustRemain fails the test unless a peek at key under r finds remaining.
func mustRemain(t testing.TB, q store.Quota, key string, r store.Rate, remaining int) {
	t.Helper()
	d, err := q.AllowN(bg, key, r, 0)
	require.NoError(t, err, "peek at %q", key)
	require.Equal(t, remaining, d.Remaining, "peek at %q: %+v", key, d)
}

// testAllowAll: AllowAll charges every limit or none: the decisions come in
// the order of the limits; the small limit's refusal leaves the other's
// quota as it was, its decision not Allowed with no wait; a refund gives
// back to all, never past full.
func testAllowAll(t *testing.T, s store.Store) {
	q := as[store.Quota](t, s)
	keys := quotaKeys("allow-all", 2)
	big, small := hourly(5), hourly(2)
	limits := []store.Limit{{Key: keys[0], Rate: big}, {Key: keys[1], Rate: small}}
	for i, want := range [][2]int{{4, 1}, {3, 0}} {
		ds := allowAll(t, q, limits, 1)
		require.True(t, ds[0].Allowed && ds[1].Allowed, "charge %d: %+v", i, ds)
		require.Equal(t, want, [2]int{ds[0].Remaining, ds[1].Remaining}, "charge %d: %+v", i, ds)
	}
	ds := allowAll(t, q, limits, 1)
	interval := storekit.Interval(small)
	assert.Equal(t, store.Decision{Remaining: 3, ResetAfter: ds[0].ResetAfter}, ds[0], "the big limit, refused by the small one")
	assert.True(t, ds[0].ResetAfter > interval && ds[0].ResetAfter <= 2*interval, "the big limit's ResetAfter %v", ds[0].ResetAfter)
	assert.False(t, ds[1].Allowed, "the small limit: %+v", ds[1])
	assert.True(t, ds[1].Remaining == 0 && ds[1].RetryAfter > 0 && ds[1].RetryAfter <= interval, "the small limit: %+v", ds[1])
	mustRemain(t, q, keys[0], big, 3)
	mustRemain(t, q, keys[1], small, 0)

	ds = allowAll(t, q, []store.Limit{limits[1], limits[0]}, 0)
	assert.True(t, ds[0].Allowed && ds[1].Allowed, "a peek, the small quota spent but not overspent: %+v", ds)
	assert.Equal(t, [2]int{0, 3}, [2]int{ds[0].Remaining, ds[1].Remaining}, "a peek in the other order: %+v", ds)
	for i, want := range [][2]int{{4, 1}, {5, 2}, {5, 2}} {
		ds = allowAll(t, q, limits, -1)
		require.True(t, ds[0].Allowed && ds[1].Allowed, "refund %d: %+v", i, ds)
		require.Equal(t, want, [2]int{ds[0].Remaining, ds[1].Remaining}, "refund %d: %+v", i, ds)
	}
	ds = allowAll(t, q, limits, 2)
	require.True(t, ds[0].Allowed && ds[1].Allowed, "a charge of 2 on full quotas: %+v", ds)
	require.Equal(t, [2]int{3, 0}, [2]int{ds[0].Remaining, ds[1].Remaining}, "a charge of 2: %+v", ds)
}

// testAllowAllOne: AllowAll over one limit decides as AllowN does, on rates
// of whole milliseconds and of microseconds.
func testAllowAllOne(t *testing.T, s store.Store) {
	q := as[store.Quota](t, s)
	for _, r := range []store.Rate{hourly(4), {Limit: 7, Window: time.Hour, Burst: 4}} {
		keys := quotaKeys("allow-all-one", 2)
		for i, cost := range []int{1, 2, 0, 2, 1, -1, 0, -4, 3} {
			want, err := q.AllowN(bg, keys[0], r, cost)
			require.NoError(t, err, "AllowN")
			got := allowAll(t, q, []store.Limit{{Key: keys[1], Rate: r}}, cost)[0]
			require.True(t, got.Allowed == want.Allowed && got.Remaining == want.Remaining,
				"step %d, cost %d under %+v: AllowAll %+v, AllowN %+v", i, cost, r, got, want)
			for _, d := range [][2]time.Duration{{got.RetryAfter, want.RetryAfter}, {got.ResetAfter, want.ResetAfter}} {
				require.InDelta(t, d[1], d[0], float64(time.Second), "step %d, cost %d: AllowAll %+v, AllowN %+v", i, cost, got, want)
			}
		}
	}
}

// testAllowAllInvalid: no limits, too many, an empty or repeated key, a
// rate that cannot decide the cost: store.ErrInvalid, nothing charged.
func testAllowAllInvalid(t *testing.T, s store.Store) {
	q := as[store.Quota](t, s)
	keys := quotaKeys("allow-all-invalid", 17)
	ok := store.Limit{Key: keys[0], Rate: hourly(2)}
	many := make([]store.Limit, 17)
	for i := range many {
		many[i] = store.Limit{Key: keys[i], Rate: hourly(2)}
	}
	for name, c := range map[string]struct {
		limits []store.Limit
		cost   int
	}{
		"no limits":         {nil, 1},
		"17 limits":         {many, 1},
		"an empty key":      {[]store.Limit{ok, {Rate: hourly(2)}}, 1},
		"a repeated key":    {[]store.Limit{ok, ok}, 1},
		"a zero limit":      {[]store.Limit{ok, {Key: keys[1], Rate: store.Rate{Window: time.Hour, Burst: 1}}}, 1},
		"a cost over one":   {[]store.Limit{ok, {Key: keys[1], Rate: hourly(1)}}, 2},
		"a refund over one": {[]store.Limit{ok, {Key: keys[1], Rate: hourly(1)}}, -2},
	} {
		_, err := q.AllowAll(bg, c.limits, c.cost)
		require.ErrorIs(t, err, store.ErrInvalid, "AllowAll with %s", name)
	}
	mustRemain(t, q, keys[0], hourly(2), 2)
	mustRemain(t, q, keys[1], hourly(1), 1)
	ds := allowAll(t, q, many[:16], 1)
	for i, d := range ds {
		require.True(t, d.Allowed && d.Remaining == 1, "limit %d of 16: %+v", i, d)
	}
}

// testAllowAllRace: goroutines charging two limits at once never exceed
// either: exactly the smaller burst is allowed, and the refusals charge
// nothing of the larger one.
func testAllowAllRace(t *testing.T, s store.Store) {
	q := as[store.Quota](t, s)
	keys := quotaKeys("allow-all-race", 2)
	limits := []store.Limit{{Key: keys[0], Rate: hourly(30)}, {Key: keys[1], Rate: hourly(20)}}
	var allowed, refused atomic.Int64
	require.NoError(t, race(8, 10, func() error {
		ds, err := q.AllowAll(bg, limits, 1)
		switch {
		case err != nil:
		case ds[0].Allowed != ds[1].Allowed:
			t.Errorf("decisions disagree: %+v", ds)
		case ds[0].Allowed:
			allowed.Add(1)
		default:
			refused.Add(1)
		}
		return err
	}))
	require.EqualValues(t, 20, allowed.Load(), "allowed of 80 (%d refused)", refused.Load())
	mustRemain(t, q, keys[0], limits[0].Rate, 10)
	mustRemain(t, q, keys[1], limits[1].Rate, 0)
}
