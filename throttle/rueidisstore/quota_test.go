package rueidisstore_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// TestQuotaNewKeyStep checks that a charge that starts with SET NX (a new
// key's step) decides as the script alone does, on the server's clock: a
// new key's first charge (cost 1 and 3) gets the burst less the cost and a
// reset of cost intervals, runs no script, and leaves the key expiring at
// that reset; a second charge finds the key and the script decides it; a
// key holding something else gets the script's error and is not changed;
// 30 goroutines charging one cold key get exactly Burst grants.
func TestQuotaNewKeyStep(t *testing.T) {
	for _, scripted := range []bool{false, true} {
		name := "set-first"
		if scripted {
			name = "script"
		}
		t.Run(name, func(t *testing.T) {
			s, srv := newStore(t)
			s.SetQuotaScripted(scripted)
			c := srv.Client(t)
			ctx := context.Background()
			r := store.Rate{Limit: 10, Window: time.Minute, Burst: 10} // T = 6 s
			for _, cost := range []int{1, 3} {
				k := key(t)
				c.ConfigResetStat(ctx)
				d, err := s.AllowN(ctx, k, r, cost)
				want := store.Decision{Allowed: true, Remaining: r.Burst - cost, ResetAfter: time.Duration(cost) * r.Interval()}
				if err != nil || d != want {
					t.Fatalf("first charge of %d: %+v, %v; want %+v", cost, d, err, want)
				}
				if ran := strings.Contains(c.Info(ctx, "commandstats").Val(), "cmdstat_eval"); ran != scripted {
					t.Fatalf("first charge of %d ran the script: %v", cost, ran)
				}
				if pttl := c.PTTL(ctx, k).Val(); pttl <= 0 || pttl > want.ResetAfter {
					t.Fatalf("first charge of %d: PTTL %v, want at most %v", cost, pttl, want.ResetAfter)
				}
				d, err = s.AllowN(ctx, k, r, 1)
				if err != nil || !d.Allowed || d.Remaining != r.Burst-cost-1 ||
					d.ResetAfter <= want.ResetAfter || d.ResetAfter > want.ResetAfter+r.Interval() {
					t.Fatalf("second charge after %d: %+v, %v", cost, d, err)
				}
			}

			k := key(t)
			c.Set(ctx, k, "token", time.Minute)
			if d, err := s.AllowN(ctx, k, r, 1); err == nil {
				t.Fatalf("charge on a lock's key: %+v, no error", d)
			}
			if v := c.Get(ctx, k).Val(); v != "token" {
				t.Fatalf("a refused charge changed the key to %q", v)
			}

			k = key(t)
			var wg sync.WaitGroup
			var mu sync.Mutex
			n := 0
			for range 30 {
				wg.Go(func() {
					d, err := s.AllowN(ctx, k, r, 1)
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
		})
	}
}
