package guard

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

func TestPolicyField(t *testing.T) {
	lock := func(name string, mode throttle.Mode, ttl time.Duration) Guard {
		return Guard{name: name, mode: mode, window: ttl}
	}
	quota := func(name string, r throttle.Rate) Guard {
		return Guard{name: name, mode: throttle.ModeQuota, window: r.Window, plan: mustPlan(name, []throttle.Rate{r})}
	}
	for want, p := range map[string]Guard{
		`"submit";q=1;w=5`:                       lock("submit", throttle.Dedupe, 5*time.Second),
		`"report";q=1;w=1`:                       lock("report", throttle.Cooldown, 10*time.Millisecond),
		`"job";q=1;qu="concurrent-requests"`:     {name: "job", mode: throttle.Exclusive, window: 5 * time.Second, holders: 1},
		`"exports";q=2;qu="concurrent-requests"`: {name: "exports", mode: throttle.Exclusive, window: 5 * time.Second, holders: 2},
		`"orders";q=1;w=60`:                      {name: "orders", mode: throttle.ModeReplay, window: time.Minute},
		`"search";q=10;w=60`:                     quota("search", throttle.Rate{Limit: 10, Burst: 10, Window: time.Minute}),
		`"api";q=100;w=3600;throttle-burst=20`:   quota("api", throttle.Rate{Limit: 100, Burst: 20, Window: time.Hour}),
		`"a b.c";q=5;w=2;throttle-burst=50`:      quota("a b.c", throttle.Rate{Limit: 5, Burst: 50, Window: 1500 * time.Millisecond}),
	} {
		got := policyField(&p)
		if p.plan != nil {
			got = p.plan.policy[0]
		}
		assert.Equal(t, want, got, "policyField of %s", p.name)
	}
}

// TestGuardPolicy checks what each constructor learns of its limiter and
// options: the name, mode and window the answers give, and the status of a
// rejection.
func TestGuardPolicy(t *testing.T) {
	st := memstore.New()
	lock, err := throttle.NewLock(st, throttle.LockConfig{Name: "job", Mode: throttle.Exclusive, TTL: time.Minute, Fence: true})
	require.NoError(t, err)
	quota, err := throttle.NewQuota(st, throttle.QuotaConfig{Name: "search"})
	require.NoError(t, err)
	replay, err := throttle.NewReplay(st, throttle.ReplayConfig{Name: "orders", TTL: time.Hour})
	require.NoError(t, err)
	for _, c := range []struct {
		g      *Guard
		want   Guard
		status int
		field  string
	}{
		{Lock(lock), Guard{name: "job", mode: throttle.Exclusive, window: time.Minute, fence: true}, 409,
			`"job";q=1;qu="concurrent-requests"`},
		{Lock(lock, WithStatus(423)), Guard{name: "job", mode: throttle.Exclusive, window: time.Minute, fence: true}, 423,
			`"job";q=1;qu="concurrent-requests"`},
		{Lock(lock, WithStatus(200)), Guard{name: "job", mode: throttle.Exclusive, window: time.Minute, fence: true}, 409, // not a 4xx or 5xx: ignored
			`"job";q=1;qu="concurrent-requests"`},
		{Quota(quota, throttle.Rate{Limit: 6, Window: time.Minute}), Guard{name: "search", mode: throttle.ModeQuota, window: time.Minute,
			plan: &plan{rates: []throttle.Rate{{Limit: 6, Burst: 6, Window: time.Minute}}}}, 429, `"search";q=6;w=60`},
		{Replay(replay), Guard{name: "orders", mode: throttle.ModeReplay, window: time.Hour}, 429, `"orders";q=1;w=3600`},
	} {
		p := c.g
		assert.Equal(t, c.want.name, p.name, "name")
		assert.Equal(t, c.want.mode, p.mode, "%s: mode", p.name)
		assert.Equal(t, c.want.window, p.window, "%s: window", p.name)
		if c.want.plan != nil {
			assert.Equal(t, c.want.plan.rates, p.plan.rates, "%s: rates", p.name)
		}
		assert.Equal(t, c.want.fence, p.fence, "%s: fence", p.name)
		assert.Equal(t, c.status, p.status, "%s: status", p.name)
		assert.Equal(t, []string{c.field}, c.g.policyField, "%s: RateLimit-Policy", p.name)
	}
	assert.PanicsWithValue(t, "guard: Lock needs a non-nil *throttle.Lock", func() { Lock(nil) })
	assert.PanicsWithValue(t, "guard: Quota needs a non-nil *throttle.Quota", func() { Quota(nil, throttle.Rate{Limit: 1, Window: time.Second}) })
	assert.PanicsWithValue(t, "guard: Replay needs a non-nil *throttle.Replay", func() { Replay(nil) })
	assert.Panics(t, func() { Quota(quota, throttle.Rate{}) }, "a rate that is not usable")
}
