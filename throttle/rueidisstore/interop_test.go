package rueidisstore_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/rueidisstore"
	"github.com/go-throttle/throttle/throttle/store"
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
				req.Key, req.Token, req.TTL = key(t), storekit.NewToken(), time.Minute
				g := mustAcquire(t, a, req)
				held, err := b.Acquire(ctx, store.Request{Key: req.Key, Token: storekit.NewToken(), TTL: time.Minute})
				require.NoError(t, err, "%+v taken by %s: %s's Acquire", req, name, other[name])
				require.False(t, held.Acquired, "%+v taken by %s: %s says %+v", req, name, other[name], held)
				require.Positive(t, held.Remaining, "%+v taken by %s: %s says %+v", req, name, other[name], held)
				require.LessOrEqual(t, held.Remaining, time.Minute, "%+v taken by %s: %s says %+v", req, name, other[name], held)
				if req.Reentrant {
					again := mustAcquire(t, b, req)
					require.Equal(t, 2, again.Holds, "re-entry through %s: %+v after %+v", other[name], again, g)
					require.Equal(t, g.Fence, again.Fence, "re-entry through %s: %+v after %+v", other[name], again, g)
					out, err := a.Release(ctx, req.Key, req.Token)
					require.NoError(t, err, "first release")
					require.Equal(t, store.StillHeld, out, "first release")
				}
				out, err := b.Release(ctx, req.Key, req.Token)
				require.NoError(t, err, "release through %s", other[name])
				require.Equal(t, store.OK, out, "release through %s", other[name])
				n, _ := gc.Exists(ctx, req.Key).Result()
				require.Zero(t, n, "%+v still stored after its release", req)
			}
		})
	}

	t.Run("record", func(t *testing.T) {
		k, tok := key(t), storekit.NewToken()
		mustAcquire(t, s, store.Request{Key: k, Token: tok, TTL: time.Minute})
		out, err := s.Record(ctx, k, tok, []byte("201 Created"), time.Minute)
		require.NoError(t, err, "record")
		require.Equal(t, store.OK, out, "record")
		rec, found, err := rs.Recorded(ctx, k)
		require.NoError(t, err, "redisstore's Recorded")
		require.True(t, found, "redisstore finds the record")
		require.Equal(t, "201 Created", string(rec), "redisstore reads the record")
		out, err = rs.Release(ctx, k, tok)
		require.NoError(t, err, "release")
		require.Equal(t, store.OK, out, "release")
		_, found, _ = s.Recorded(ctx, k)
		require.False(t, found, "the record outlived its lock's release")
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
				assert.NoError(t, err)
				if d.Allowed {
					allowed.Add(1)
				}
			})
		}
		wg.Wait()
		require.EqualValues(t, 7, allowed.Load(), "allowed of a shared burst of 7")
	})
}

// TestLimiterModes runs every limiter of the core on the store: a Dedupe
// Lock turns a duplicate away, an Exclusive Lock serialises Do, a Quota
// admits exactly Burst of concurrent requests, and a Replay hands a
// duplicate the first one's record.
func TestLimiterModes(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	newLock := func(c throttle.LockConfig) *throttle.Lock {
		t.Helper()
		l, err := throttle.NewLock(s, c)
		require.NoError(t, err)
		return l
	}

	t.Run("dedupe", func(t *testing.T) {
		l := newLock(throttle.LockConfig{Name: "dedupe", TTL: time.Minute})
		_, err := l.Admit(ctx, "alice")
		require.NoError(t, err, "first Admit")
		_, err = l.Admit(ctx, "alice")
		var ce *throttle.ContendedError
		require.ErrorAs(t, err, &ce, "duplicate")
		require.Positive(t, ce.RetryAfter, "duplicate's RetryAfter")
		require.LessOrEqual(t, ce.RetryAfter, time.Minute, "duplicate's RetryAfter")
	})

	t.Run("exclusive-do", func(t *testing.T) {
		l := newLock(throttle.LockConfig{Name: "exclusive", Mode: throttle.Exclusive, Wait: 30 * time.Second, Fence: true})
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
					_, dup := fences.LoadOrStore(throttle.LeaseFrom(ctx).Fence(), true)
					assert.False(t, dup, "two holders got one fence")
					time.Sleep(5 * time.Millisecond)
					return nil
				})
				assert.NoError(t, err, "Do")
			})
		}
		wg.Wait()
		require.EqualValues(t, 1, most.Load(), "%d holders at once", most.Load())
	})

	t.Run("quota", func(t *testing.T) {
		q, err := throttle.NewQuota(s, throttle.QuotaConfig{Name: "quota"})
		require.NoError(t, err)
		r := throttle.Rate{Limit: 5, Window: time.Hour}
		var allowed atomic.Int64
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				d, err := q.Allow(ctx, "bob", r, 1)
				assert.NoError(t, err)
				if d.Allowed {
					allowed.Add(1)
				}
			})
		}
		wg.Wait()
		require.EqualValues(t, 5, allowed.Load(), "%d of 50 allowed by a quota of 5", allowed.Load())
	})

	t.Run("replay", func(t *testing.T) {
		l, err := throttle.NewReplay(s, throttle.ReplayConfig{Name: "replay", TTL: time.Minute})
		require.NoError(t, err)
		lease, rec, err := l.Claim(ctx, "order-1")
		require.NoError(t, err, "first claim")
		require.NotNil(t, lease, "first claim's lease")
		require.Nil(t, rec, "first claim's record")
		got := make(chan []byte)
		go func() {
			_, rec, err := l.Claim(ctx, "order-1") // waits for the record
			assert.NoError(t, err, "duplicate claim")
			got <- rec
		}()
		time.Sleep(20 * time.Millisecond)
		require.NoError(t, lease.Record(ctx, []byte("order 1 placed")))
		require.Equal(t, "order 1 placed", string(<-got), "the duplicate's record")
	})
}

// TestQuotaMatchesMemstore drives one sequence of requests, with costs,
// refunds and a fake clock, against the store and memstore, and requires
// the same decision at every step, for a rate whose interval is not a
// whole millisecond (gcra.lua) and one whose interval is (gcra_ms.lua).
func TestQuotaMatchesMemstore(t *testing.T) {
	for _, r := range []store.Rate{{Limit: 3, Window: time.Second, Burst: 5}, {Limit: 4, Window: time.Second, Burst: 5}} {
		t.Run(storekit.Interval(r).String(), func(t *testing.T) { quotaMatchesMemstore(t, r) })
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
		require.Equal(t, merr == nil, rerr == nil, "step %d (+%v, cost %d): memstore %+v, %v; rueidisstore %+v, %v",
			i, st.advance, st.cost, md, merr, rd, rerr)
		require.Equal(t, md, rd, "step %d (+%v, cost %d): memstore %v; rueidisstore %v", i, st.advance, st.cost, merr, rerr)
		if rerr != nil {
			require.ErrorIs(t, rerr, store.ErrInvalid, "step %d", i)
		}
	}
}
