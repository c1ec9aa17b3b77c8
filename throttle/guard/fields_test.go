package guard

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// TestRefillKeepsTheEffectiveWindow checks the promise the RateLimit "t"
// makes under draft -11: for Rate.NextRefill(d) after a decision d, the client can
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
		T := r.Interval()
		checked := 0
		for i := range 400 {
			set(clock().Add(time.Duration(rng.Int64N(int64(2*T)/1000)) * time.Microsecond))
			key := "k" + r.Window.String()
			d, err := s.AllowN(ctx, key, r, rng.IntN(r.Burst+1))
			if err != nil {
				t.Fatal(err)
			}
			wait := r.NextRefill(d)
			if d.Remaining == r.Burst {
				if wait != 0 {
					t.Fatalf("full quota: refill %v, want 0", wait)
				}
				continue
			}
			if wait <= 0 || wait > T {
				t.Fatalf("step %d: refill %v of %+v, want within (0, %v]", i, wait, d, T)
			}
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
				if err != nil || p.Remaining != c.want {
					t.Fatalf("rate %+v step %d: %+v then peek after %v: %+v, %v; want remaining %d",
						r, i, d, c.after, p, err, c.want)
				}
			}
			set(at)
			checked++
		}
		if checked < 100 {
			t.Fatalf("rate %+v: only %d decisions checked", r, checked)
		}
	}
}

func TestPolicyField(t *testing.T) {
	for want, p := range map[string]throttle.Policy{
		`"submit";q=1;w=5`:                     {Name: "submit", Window: 5 * time.Second},
		`"report";q=1;w=1`:                     {Name: "report", Mode: throttle.Cooldown, Window: 10 * time.Millisecond},
		`"job";q=1;qu="concurrent-requests"`:   {Name: "job", Mode: throttle.Exclusive, Window: 5 * time.Second},
		`"search";q=10;w=60`:                   {Name: "search", Mode: throttle.Quota, Limit: 10, Burst: 10, Window: time.Minute},
		`"api";q=100;w=3600;throttle-burst=20`: {Name: "api", Mode: throttle.Quota, Limit: 100, Burst: 20, Window: time.Hour},
		`"a b.c";q=5;w=2;throttle-burst=50`:    {Name: "a b.c", Mode: throttle.Quota, Limit: 5, Burst: 50, Window: 1500 * time.Millisecond},
	} {
		if got := policyField(&p); got != want {
			t.Errorf("policyField(%+v) = %s, want %s", p, got, want)
		}
	}
}
