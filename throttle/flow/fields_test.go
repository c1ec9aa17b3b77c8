package flow

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// TestRefillKeepsTheEffectiveWindow checks the promise the RateLimit "t"
// makes under draft -11: for storekit.NextRefill(r, d) after a decision d, the client can
// use no more than d.Remaining, and no less either: a peek just before
// the refill still sees d.Remaining, a peek at it sees one more. A random
// walk of charges and idle times over a fake clock covers full, partial
// and spent quotas, with intervals of whole milliseconds and one that is
// not. For whole milliseconds the store reads its clock in milliseconds
// (as Redis does): the decision's durations count from the last tick, so
// the refill comes that fraction of a millisecond sooner than wait after
// the decision, and the test looks there.
func TestRefillKeepsTheEffectiveWindow(t *testing.T) {
	var mu sync.Mutex
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	set := func(at time.Time) { mu.Lock(); defer mu.Unlock(); now = at }
	s := memstore.New(memstore.WithClock(clock))
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, r := range []store.Rate{
		{Limit: 10, Window: time.Minute, Burst: 10},
		{Limit: 3, Window: time.Second, Burst: 5},
		{Limit: 7, Window: 100 * time.Millisecond, Burst: 1},
	} {
		T := storekit.Interval(r)
		checked := 0
		for i := range 400 {
			set(clock().Add(time.Duration(rng.Int64N(int64(2*T)/1000)) * time.Microsecond))
			key := "k" + r.Window.String()
			d, err := s.AllowN(ctx, key, r, rng.IntN(r.Burst+1))
			require.NoError(t, err)
			wait := storekit.NextRefill(r, d)
			if d.Remaining == r.Burst {
				require.Zero(t, wait, "full quota: refill")
				continue
			}
			require.Positive(t, wait, "step %d: refill of %+v", i, d)
			require.LessOrEqual(t, wait, T, "step %d: refill of %+v", i, d)
			at := clock()
			var tick time.Duration // since the clock's last millisecond
			if T%time.Millisecond == 0 {
				tick = at.Sub(start) % time.Millisecond
			}
			for _, c := range []struct {
				after time.Duration
				want  int
			}{{wait - tick - time.Microsecond, d.Remaining}, {wait - tick, d.Remaining + 1}} {
				set(at.Add(c.after))
				p, err := s.AllowN(ctx, key, r, 0)
				require.NoError(t, err)
				require.Equal(t, c.want, p.Remaining, "rate %+v step %d: %+v then peek after %v: %+v", r, i, d, c.after, p)
			}
			set(at)
			checked++
		}
		require.GreaterOrEqual(t, checked, 100, "rate %+v: decisions checked", r)
	}
}

func TestSeconds(t *testing.T) {
	for d, want := range map[time.Duration]int64{
		0: 1, time.Millisecond: 1, time.Second: 1, time.Second + 1: 2, 2500 * time.Millisecond: 3,
	} {
		assert.Equal(t, want, seconds(d), "seconds(%v)", d)
	}
}

// TestPolicyField checks RateLimit-Policy, and the policy Append gives,
// for each kind of job.
func TestPolicyField(t *testing.T) {
	st := memstore.New()
	lock := func(c throttle.LockConfig) *Job {
		l, err := throttle.NewLock(st, c)
		require.NoError(t, err)
		return Lock(l)
	}
	quota := func(name string, r throttle.Rate) *Job {
		q, err := throttle.NewQuota(st, throttle.QuotaConfig{Name: name})
		require.NoError(t, err)
		return Quota(q, r)
	}
	replay, err := throttle.NewReplay(st, throttle.ReplayConfig{Name: "orders", TTL: time.Minute})
	require.NoError(t, err)
	for _, c := range []struct {
		j    *Job
		want string
		lim  Limit
	}{
		{lock(throttle.LockConfig{Name: "submit"}), `"submit";q=1;w=5`, Limit{"submit", 1, 5 * time.Second, -1, 0}},
		{lock(throttle.LockConfig{Name: "report", Mode: throttle.Cooldown, TTL: 10 * time.Millisecond}), `"report";q=1;w=1`,
			Limit{"report", 1, time.Second, -1, 0}},
		{lock(throttle.LockConfig{Name: "job", Mode: throttle.Exclusive}), `"job";q=1;qu="concurrent-requests"`,
			Limit{"job", 1, 0, -1, 0}},
		{lock(throttle.LockConfig{Name: "exports", Mode: throttle.Exclusive, Holders: 2}), `"exports";q=2;qu="concurrent-requests"`,
			Limit{"exports", 2, 0, -1, 0}},
		{Replay(replay), `"orders";q=1;w=60`, Limit{"orders", 1, time.Minute, -1, 0}},
		{quota("search", throttle.Rate{Limit: 10, Window: time.Minute}), `"search";q=10;w=60`, Limit{"search", 10, time.Minute, -1, 0}},
		{quota("api", throttle.Rate{Limit: 100, Burst: 20, Window: time.Hour}), `"api";q=100;w=3600;throttle-burst=20`,
			Limit{"api", 100, time.Hour, -1, 0}},
		{quota("a b.c", throttle.Rate{Limit: 5, Burst: 50, Window: 1500 * time.Millisecond}), `"a b.c";q=5;w=2;throttle-burst=50`,
			Limit{"a b.c", 5, 2 * time.Second, -1, 0}},
	} {
		lim := c.j.policy()
		policy, limit := fieldsOf(&lim)
		assert.Equal(t, c.want, policy, "RateLimit-Policy of %s", c.j.name)
		assert.Empty(t, limit, "RateLimit of %s", c.j.name)
		assert.Equal(t, c.lim, lim.First(), "First of %s", c.j.name)
	}
	var none Limits
	p, l := none.Fields()
	assert.Nil(t, p)
	assert.Nil(t, l)
	assert.Zero(t, none.First())
}

// TestQuotaFields checks that the cached RateLimit values of Quota
// decisions are those limitField builds, for every r near both ends of
// quotas smaller and larger than the cache, and every t in and beyond it.
func TestQuotaFields(t *testing.T) {
	for _, burst := range []int{1, 10, quotaEdge - 1, quotaEdge, quotaEdge + 1, 2*quotaEdge - 1, 2 * quotaEdge, 200, 10_000} {
		for _, window := range []time.Duration{time.Second, 6 * time.Second, time.Minute, time.Hour} {
			p := mustPlan("q", []throttle.Rate{{Limit: burst, Burst: burst, Window: window}})
			for r := range burst + 1 {
				if r > 3*quotaEdge && burst-r > 3*quotaEdge {
					continue
				}
				for ts := int64(-1); ts <= quotaSeconds+2; ts++ {
					want := limitField("q", r, ts)
					for range 2 { // made, then cached
						require.Equal(t, []string{want}, p.quotaLimit(0, r, ts), "burst %d window %v r=%d t=%d", burst, window, r, ts)
					}
				}
			}
		}
	}
}

// TestQuotaFieldOutsideCache: a value the cache does not hold (t of 15 s
// or more) is made once and given again while r and t repeat, as in a
// flood of refusals on one key, and made anew when they change; goroutines
// asking for different values at once each get their own.
func TestQuotaFieldOutsideCache(t *testing.T) {
	p := mustPlan("q", []throttle.Rate{{Limit: 5, Window: 5 * time.Minute}})
	first := p.quotaLimit(0, 0, 60)
	require.Equal(t, []string{`"q";r=0;t=60`}, first)
	again := p.quotaLimit(0, 0, 60)
	require.Same(t, &first[0], &again[0], "the same r and t: the value made last")
	next := p.quotaLimit(0, 0, 59)
	require.Equal(t, []string{`"q";r=0;t=59`}, next)
	require.NotSame(t, &first[0], &next[0])
	require.Equal(t, []string{`"q";r=1;t=59`}, p.quotaLimit(0, 1, 59), "another r")
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 1000 {
				ts := int64(20 + (g+i)%3)
				assert.Equal(t, limitField("q", 0, ts), p.quotaLimit(0, 0, ts)[0])
			}
		})
	}
	wg.Wait()
}

// TestDecidedLimits checks the fields and First of Quota decisions: t
// when a refill is ahead, none for a full quota; several rates most
// restrictive first, and the names Violated gives.
func TestDecidedLimits(t *testing.T) {
	one := mustPlan("search", []throttle.Rate{{Limit: 10, Window: time.Minute}})
	j := &Job{name: "search", plan: one}
	d := store.Decision{Remaining: 2, RetryAfter: 10 * time.Second, ResetAfter: 45 * time.Second}
	require.Equal(t, int64(3), one.reset(0, &d), "t: until one more fits")
	require.Equal(t, int64(-1), one.reset(0, &store.Decision{Remaining: 10}), "a full quota: no t")
	lim := Limits{j: j, kind: decided, p: one, r: 2, t: 3}
	policy, limit := fieldsOf(&lim)
	assert.Equal(t, `"search";q=10;w=60`, policy)
	assert.Equal(t, `"search";r=2;t=3`, limit, "t: until one more fits")
	assert.Equal(t, Limit{"search", 10, time.Minute, 2, 3 * time.Second}, lim.First())
	lim.r, lim.t = 10, -1
	_, limit = fieldsOf(&lim)
	assert.Equal(t, `"search";r=10`, limit, "a full quota: no t")
	assert.Equal(t, []string{"search"}, (&Refusal{Limits: lim}).Violated())

	two := mustPlan("items", []throttle.Rate{{Name: "burst", Limit: 100, Window: time.Second}, {Name: "daily", Limit: 3, Window: 24 * time.Hour}})
	lim = Limits{j: j, kind: decided, p: two, ds: []store.Decision{{Remaining: 99, ResetAfter: 10 * time.Millisecond},
		{Remaining: 0, RetryAfter: time.Hour, ResetAfter: 24 * time.Hour}}}
	policy, limit = fieldsOf(&lim)
	assert.Equal(t, `"daily";q=3;w=86400, "burst";q=100;w=1`, policy, "the most restrictive first")
	assert.Equal(t, `"daily";r=0;t=28800, "burst";r=99;t=1`, limit)
	assert.Equal(t, Limit{"daily", 3, 24 * time.Hour, 0, 28800 * time.Second}, lim.First())
	assert.Equal(t, []string{"daily"}, (&Refusal{Limits: lim}).Violated())
}
