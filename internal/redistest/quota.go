package redistest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

// CheckQuotaNewKey checks a Redis store's quota charges on the server's
// clock, against the server c reads: a new key's first charge (cost 1 and
// 3) gets the burst less the cost and a reset of cost intervals, runs a
// script only when scripted says the store was set to (otherwise the
// store's SET NX step charges it), and leaves the key expiring within that
// reset; a second charge finds the key and continues the quota; a key
// holding something else (a lock's token) gets an error and is not
// changed; 30 goroutines charging one cold key get exactly Burst grants.
// key returns a new key for each part.
func CheckQuotaNewKey(t *testing.T, q store.Quota, c *redis.Client, scripted bool, key func() string) {
	t.Helper()
	ctx := context.Background()
	r := store.Rate{Limit: 10, Window: time.Minute, Burst: 10} // an interval of 6 s
	for _, cost := range []int{1, 3} {
		k := key()
		c.ConfigResetStat(ctx)
		d, err := q.AllowN(ctx, k, r, cost)
		want := store.Decision{Allowed: true, Remaining: r.Burst - cost, ResetAfter: time.Duration(cost) * storekit.Interval(r)}
		if err != nil || d != want {
			t.Fatalf("first charge of %d: %+v, %v; want %+v", cost, d, err, want)
		}
		if ran := strings.Contains(c.Info(ctx, "commandstats").Val(), "cmdstat_eval"); ran != scripted {
			t.Fatalf("first charge of %d ran a script: %v, want %v", cost, ran, scripted)
		}
		if pttl := c.PTTL(ctx, k).Val(); pttl <= 0 || pttl > want.ResetAfter {
			t.Fatalf("first charge of %d: PTTL %v, want at most %v", cost, pttl, want.ResetAfter)
		}
		d, err = q.AllowN(ctx, k, r, 1)
		if err != nil || !d.Allowed || d.Remaining != r.Burst-cost-1 ||
			d.ResetAfter <= want.ResetAfter || d.ResetAfter > want.ResetAfter+storekit.Interval(r) {
			t.Fatalf("second charge after %d: %+v, %v", cost, d, err)
		}
	}

	k := key()
	c.Set(ctx, k, "token", time.Minute)
	if d, err := q.AllowN(ctx, k, r, 1); err == nil {
		t.Fatalf("charge on a lock's key: %+v, no error", d)
	}
	if v := c.Get(ctx, k).Val(); v != "token" {
		t.Fatalf("a refused charge changed the key to %q", v)
	}

	k = key()
	var wg sync.WaitGroup
	var mu sync.Mutex
	n := 0
	for range 30 {
		wg.Go(func() {
			d, err := q.AllowN(ctx, k, r, 1)
			if err != nil {
				t.Error(err)
				return
			}
			if d.Allowed {
				mu.Lock()
				n++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if n != r.Burst {
		t.Fatalf("%d of 30 concurrent charges on a cold key allowed, want %d", n, r.Burst)
	}
}
