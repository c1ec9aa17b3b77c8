package rueidisstore_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/rueidisstore"
	"github.com/go-throttle/throttle/throttle/store"

	"github.com/stretchr/testify/require"

	"github.com/stretchr/testify/assert"
)

// TestInterop: redisstore (go-redis) and rueidisstore on one server keep
// the same data, so that processes of one service can use either: a lock
// one takes the other sees held and can free with the token; reentrant
// holds, fences, records and quotas are shared.
func TestInterop(t *testing.T) {
	s, srv := newStore(t)
	gc := srv.Client(t)
	rs := redisstore.New(gc)
	t.Cleanup(func() { _ = rs.Close() })
	ctx := context.Background()
	stores := map[string]store.Store{"rueidisstore": s, "redisstore": rs}
	other := map[string]string{"rueidisstore": "redisstore", "redisstore": "rueidisstore"}

	for name, a := range stores {
		b := stores[other[name]]
		t.Run(name+"-then-"+other[name], func(t *testing.T) {
			for _, req := range []store.Request{{}, {Fence: true}, {Reentrant: true}, {Reentrant: true, Fence: true}} {
				req.Key, req.Token, req.TTL = key(t), store.NewToken(), time.Minute
				g := mustAcquire(t, a, req)
				held, err := b.Acquire(ctx, store.Request{Key: req.Key, Token: store.NewToken(), TTL: time.Minute})
				if err != nil || held.Acquired || held.Remaining <= 0 || held.Remaining > time.Minute {
					t.Fatalf("%+v taken by %s: %s says %+v, %v", req, name, other[name], held, err)
				}
				if req.Reentrant {
					again := mustAcquire(t, b, req)
					if again.Holds != 2 || again.Fence != g.Fence {
						t.Fatalf("re-entry through %s: %+v after %+v", other[name], again, g)
					}
					if out, err := a.Release(ctx, req.Key, req.Token); err != nil || out != store.StillHeld {
						t.Fatalf("first release: %v, %v", out, err)
					}
				}
				if out, err := b.Release(ctx, req.Key, req.Token); err != nil || out != store.OK {
					t.Fatalf("release through %s: %v, %v", other[name], out, err)
				}
				if n, _ := gc.Exists(ctx, req.Key).Result(); n != 0 {
					t.Fatalf("%+v still stored after its release", req)
				}
			}
		})
	}

	t.Run("record", func(t *testing.T) {
		k, tok := key(t), store.NewToken()
		mustAcquire(t, s, store.Request{Key: k, Token: tok, TTL: time.Minute})
		if out, err := s.Record(ctx, k, tok, []byte("201 Created")); err != nil || out != store.OK {
			t.Fatalf("record: %v, %v", out, err)
		}
		rec, found, err := rs.Recorded(ctx, k)
		if err != nil || !found || string(rec) != "201 Created" {
			t.Fatalf("redisstore reads %q, %v, %v", rec, found, err)
		}
		if out, err := rs.Release(ctx, k, tok); err != nil || out != store.OK {
			t.Fatalf("release: %v, %v", out, err)
		}
		if _, found, _ := s.Recorded(ctx, k); found {
			t.Fatal("the record outlived its lock's release")
		}
	})

	t.Run("quota", func(t *testing.T) {
		// 40 concurrent requests alternate between the stores on one
		// quota of burst 7: exactly 7 are allowed in all.
		k := key(t)
		r := store.Rate{Limit: 7, Window: time.Hour, Burst: 7}
		var allowed atomic.Int64
		var wg sync.WaitGroup
		for i := range 40 {
			st := []store.Quota{s, rs}[i%2]
			wg.Go(func() {
				d, err := st.AllowN(ctx, k, r, 1)
				assert.Nil(t, err, err)
				if d.Allowed {
					allowed.Add(1)
				}
			})
		}
		wg.Wait()
		if got := allowed.Load(); got != 7 {
			t.Fatalf("%d allowed of a shared burst of 7", got)
		}
	})
}

// TestLimiterModes runs every mode of the core on the store: Dedupe turns
// a duplicate away, Exclusive serialises Do, Quota admits exactly Burst of
// concurrent requests, and Replay hands a duplicate the first one's record.
func TestLimiterModes(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	newLimiter := func(p throttle.Policy) *throttle.Limiter {
		t.Helper()
		l, err := throttle.New(s, p)
		require.NoError(t, err)
		return l
	}

	t.Run("dedupe", func(t *testing.T) {
		l := newLimiter(throttle.Policy{Name: "dedupe", Window: time.Minute})
		if _, err := l.Admit(ctx, "alice"); err != nil {
			t.Fatal(err)
		}
		_, err := l.Admit(ctx, "alice")
		var ce *throttle.ContendedError
		if !errors.As(err, &ce) || ce.RetryAfter <= 0 || ce.RetryAfter > time.Minute {
			t.Fatalf("duplicate: %v", err)
		}
	})

	t.Run("exclusive-do", func(t *testing.T) {
		l := newLimiter(throttle.Policy{Name: "exclusive", Mode: throttle.Exclusive, Wait: 30 * time.Second, Fence: true})
		var inside, most atomic.Int64
		var fences sync.Map
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				err := l.Do(ctx, "job", func(ctx context.Context) error {
					n := inside.Add(1)
					defer inside.Add(-1)
					for {
						m := most.Load()
						if n <= m || most.CompareAndSwap(m, n) {
							break
						}
					}
					if _, dup := fences.LoadOrStore(throttle.LeaseFrom(ctx).Fence(), true); dup {
						t.Error("two holders got one fence")
					}
					time.Sleep(5 * time.Millisecond)
					return nil
				})
				assert.Nil(t, err, err)
			})
		}
		wg.Wait()
		require.EqualValues(t, 1, most.Load(), "%d holders at once", most.Load())
	})

	t.Run("quota", func(t *testing.T) {
		l := newLimiter(throttle.Policy{Name: "quota", Mode: throttle.Quota, Limit: 5, Window: time.Hour})
		var allowed atomic.Int64
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				d, err := l.Allow(ctx, "bob")
				assert.Nil(t, err, err)
				if d.Allowed {
					allowed.Add(1)
				}
			})
		}
		wg.Wait()
		require.EqualValues(t, 5, allowed.Load(), "%d of 50 allowed by a quota of 5", allowed.Load())
	})

	t.Run("replay", func(t *testing.T) {
		l := newLimiter(throttle.Policy{Name: "replay", Mode: throttle.Replay, Window: time.Minute})
		lease, rec, err := l.Claim(ctx, "order-1")
		if err != nil || lease == nil || rec != nil {
			t.Fatalf("first claim: %v, %q, %v", lease, rec, err)
		}
		got := make(chan []byte)
		go func() {
			_, rec, err := l.Claim(ctx, "order-1") // waits for the record
			assert.Nil(t, err, err)
			got <- rec
		}()
		time.Sleep(20 * time.Millisecond)
		require.NoError(t, lease.Record(ctx, []byte("order 1 placed")))
		if rec := <-got; string(rec) != "order 1 placed" {
			t.Fatalf("duplicate got %q", rec)
		}
	})
}

// TestQuotaMatchesMemstore drives one sequence of requests, with costs,
// refunds and a fake clock, against the store and memstore, and requires
// the same decision at every step, for a rate whose interval is not a
// whole millisecond (gcra.lua) and one whose interval is (gcra_ms.lua).
func TestQuotaMatchesMemstore(t *testing.T) {
	for _, r := range []store.Rate{{Limit: 3, Window: time.Second, Burst: 5}, {Limit: 4, Window: time.Second, Burst: 5}} {
		t.Run(r.Interval().String(), func(t *testing.T) { quotaMatchesMemstore(t, r) })
	}
}

func quotaMatchesMemstore(t *testing.T, r store.Rate) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return now }
	s, _ := newStore(t, rueidisstore.WithQuotaClock(clock))
	ms := memstoreWithClock(clock)
	ctx := context.Background()
	k := key(t)
	steps := []struct {
		advance time.Duration
		cost    int
	}{
		{0, 0}, {0, 5}, {0, 1}, {200 * time.Millisecond, 1}, {150*time.Millisecond + 300*time.Microsecond, 1},
		{0, -2}, {0, 3}, {time.Second, 2}, {0, 6}, {0, -6}, {10 * time.Second, 0}, {0, 1},
	}
	for i, st := range steps {
		now = now.Add(st.advance)
		md, merr := ms.AllowN(ctx, k, r, st.cost)
		rd, rerr := s.AllowN(ctx, k, r, st.cost)
		if (merr == nil) != (rerr == nil) || md != rd {
			t.Fatalf("step %d (+%v, cost %d): memstore %+v, %v; rueidisstore %+v, %v",
				i, st.advance, st.cost, md, merr, rd, rerr)
		}
		if rerr != nil && !errors.Is(rerr, store.ErrInvalid) {
			t.Fatalf("step %d: %v does not match store.ErrInvalid", i, rerr)
		}
	}
}
