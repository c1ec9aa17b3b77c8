package throttle_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/faultproxy"
	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/rueidisstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// lateTimeout is the store timeout of TestLateChargeCountsOnce: long
// against go-redis's retry backoff (8 to 24 ms before its first retry), so
// that a retry would surely be sent while the call still runs.
const lateTimeout = 300 * time.Millisecond

// TestLateChargeCountsOnce: a quota charge whose reply comes later than the
// store timeout, while the store answers other calls (a loaded process
// reads it too late), ran on Redis and may have counted: it must not be
// sent again, neither by the client (go-redis retries a command whose read
// timed out unless its context is done) nor by the limiter. Before, the
// charge was counted twice and the caller told it was allowed once, with
// no error (TestStrictStacked/redisstore on a loaded machine). The reply is
// delayed by a fault proxy, only the charge's: once the proxy holds it, the
// delay is lifted, and peeks on another key keep the store answering.
func TestLateChargeCountsOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("needs redis-server")
	}
	for _, name := range []string{"redisstore", "rueidisstore"} {
		t.Run(name, func(t *testing.T) {
			srv := redistest.Start(t)
			proxy := faultproxy.Start(t, srv.Addr)
			var st *redisstore.Store
			if name == "redisstore" {
				// go-redis's defaults (MaxRetries 3), a warm pool.
				rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ContextTimeoutEnabled: true, MinIdleConns: 4})
				t.Cleanup(func() { _ = rdb.Close() })
				st = redisstore.New(rdb)
			} else {
				rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{proxy.Addr()}, DisableCache: true})
				require.NoError(t, err, "rueidis client")
				t.Cleanup(rc.Close)
				st = rueidisstore.New(rc)
			}
			t.Cleanup(func() { _ = st.Close() })
			q := newQuota(t, st, throttle.QuotaConfig{Name: "late", Options: throttle.Options{Timeout: lateTimeout}})
			for _, r := range []throttle.Rate{
				{Name: "smooth", Limit: 10, Window: time.Hour},
				{Name: "strict", Limit: 10, Window: time.Hour, Strict: true},
			} {
				t.Run(r.Name, func(t *testing.T) { lateCharge(t, q, proxy, r) })
			}
		})
	}
}

// lateCharge charges r with a late reply on a fresh key (on redisstore a
// smooth rate's SET NX, a strict one's script), and checks that the quota
// counted it once at most, and exactly once if it was allowed.
func lateCharge(t *testing.T, q *throttle.Quota, proxy *faultproxy.Proxy, r throttle.Rate) {
	ctx := context.Background()
	// A charge on another key, so that the store has answered: on a loaded
	// machine its reply too may come after the timeout, and it is shed.
	if _, err := q.Allow(ctx, "warm", r, 1); err != nil {
		t.Logf("the warm-up charge: %v", err)
	}

	before := proxy.Stats().ServerBytes
	proxy.SetLatency(0, 2*lateTimeout)
	type result struct {
		d   store.Decision
		err error
	}
	late := make(chan result, 1)
	go func() {
		d, err := q.Allow(ctx, "u", r, 1)
		late <- result{d, err}
	}()
	require.Eventually(t, func() bool { return proxy.Stats().ServerBytes > before },
		10*time.Second, time.Millisecond, "the late charge's reply never reached the proxy")
	proxy.Clear() // the charge's reply stays late; every later one is on time

	// The store keeps answering peeks (which change nothing), each on its
	// own, until the charge returned, so that nothing judges it silent.
	var res result
	var wg sync.WaitGroup
	var peekErrs atomic.Int64
	for n := 0; ; n++ {
		select {
		case res = <-late:
		case <-time.After(5 * time.Millisecond):
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := q.Allow(ctx, fmt.Sprint("other-", n%8), r, 0); err != nil {
					peekErrs.Add(1)
				}
			}()
			continue
		}
		break
	}
	wg.Wait()
	if n := peekErrs.Load(); n > 0 {
		// rueidis pipelines: a peek may wait behind the late reply.
		t.Logf("%d peeks failed while the charge waited", n)
	}
	time.Sleep(3 * lateTimeout) // any copy of the charge has reached Redis

	d, err := q.Allow(ctx, "u", r, 0)
	require.NoError(t, err, "a peek after the late charge")
	if res.err == nil {
		assert.True(t, res.d.Allowed && res.d.Remaining == 9, "the late charge's decision: %+v", res.d)
		assert.Equal(t, 9, d.Remaining, "the late charge, allowed, counted once")
		return
	}
	// Shed: it may have counted (once), or not have run (rueidis's own
	// PING may have been the late reply, and the charge sent after it).
	assert.ErrorIs(t, res.err, throttle.ErrStore, "the late charge's error")
	assert.GreaterOrEqual(t, d.Remaining, 9, "the late charge, shed, counted at most once: %v", res.err)
}
