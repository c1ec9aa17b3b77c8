package memstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

func TestRateCheck(t *testing.T) {
	ok := store.Rate{Limit: 4, Window: time.Second, Burst: 4}
	for _, tc := range []struct {
		r    store.Rate
		cost int
		ok   bool
	}{
		{ok, 0, true},
		{ok, 1, true},
		{ok, 4, true},
		{store.Rate{Limit: 1, Window: time.Microsecond, Burst: 1}, 1, true},
		{store.Rate{Limit: 1, Window: 100 * 365 * 24 * time.Hour, Burst: 1}, 1, true},
		{store.Rate{Limit: 0, Window: time.Second, Burst: 1}, 1, false},
		{store.Rate{Limit: 1, Window: 0, Burst: 1}, 1, false},
		{store.Rate{Limit: 1, Window: -time.Second, Burst: 1}, 1, false},
		{store.Rate{Limit: 1, Window: time.Second, Burst: 0}, 0, false},
		{store.Rate{Limit: 1001, Window: time.Millisecond, Burst: 1}, 1, false}, // T < 1µs
		{store.Rate{Limit: 1, Window: 100 * 365 * 24 * time.Hour, Burst: 2}, 1, false},
		{ok, -1, true},  // a refund
		{ok, -4, true},  // a refund of the whole burst
		{ok, -5, false}, // a refund above burst
		{ok, 5, false},
	} {
		err := storekit.Check(tc.r, tc.cost)
		if tc.ok {
			assert.NoError(t, err, "Check(%+v, %d)", tc.r, tc.cost)
		} else {
			assert.ErrorIs(t, err, store.ErrInvalid, "Check(%+v, %d)", tc.r, tc.cost)
		}
	}
	assert.ErrorContains(t, storekit.Check(ok, -5), "refund 5 is above burst 4")
	assert.Equal(t, 333333*time.Microsecond, storekit.Interval(store.Rate{Limit: 3, Window: time.Second, Burst: 3}))
}

// TestQuotaSequence checks decisions worked out by hand: T = 250ms and
// tolerance 1s.
func TestQuotaSequence(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now))
	r := store.Rate{Limit: 4, Window: time.Second, Burst: 4}
	ms := time.Millisecond
	steps := []struct {
		advance time.Duration
		cost    int
		want    store.Decision
	}{
		{0, 1, store.Decision{Allowed: true, Remaining: 3, ResetAfter: 250 * ms}},
		{0, 3, store.Decision{Allowed: true, Remaining: 0, ResetAfter: 1000 * ms}},
		{0, 1, store.Decision{Remaining: 0, RetryAfter: 250 * ms, ResetAfter: 1000 * ms}},
		{0, 0, store.Decision{Allowed: true, Remaining: 0, ResetAfter: 1000 * ms}},
		{100 * ms, 1, store.Decision{Remaining: 0, RetryAfter: 150 * ms, ResetAfter: 900 * ms}},
		{150 * ms, 1, store.Decision{Allowed: true, Remaining: 0, ResetAfter: 1000 * ms}},
		// TAT is 1.25s after the start, now 0.75s: 2 fit, 3 do not.
		{500 * ms, 3, store.Decision{Remaining: 2, RetryAfter: 250 * ms, ResetAfter: 500 * ms}},
		{0, 2, store.Decision{Allowed: true, Remaining: 0, ResetAfter: 1000 * ms}},
		{999 * ms, 0, store.Decision{Allowed: true, Remaining: 3, ResetAfter: 1 * ms}},
		{1 * ms, 0, store.Decision{Allowed: true, Remaining: 4}},
		{0, 4, store.Decision{Allowed: true, Remaining: 0, ResetAfter: 1000 * ms}},
	}
	ctx := context.Background()
	for i, st := range steps {
		clk.Advance(st.advance)
		got, err := s.AllowN(ctx, "k", r, st.cost)
		require.NoError(t, err, "step %d", i)
		require.Equal(t, st.want, got, "step %d (+%v, cost %d)", i, st.advance, st.cost)
	}
	_, err := s.AllowN(ctx, "k", r, 5)
	require.ErrorIs(t, err, store.ErrInvalid, "cost above burst")
	_, err = s.AllowN(ctx, "", r, 1)
	require.ErrorIs(t, err, store.ErrInvalid, "empty key")
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.AllowN(cctx, "k", r, 1)
	require.ErrorIs(t, err, context.Canceled, "done context")
}

// TestQuotaRefund checks refunds (negative costs) against decisions worked
// out by hand, T = 250ms and tolerance 1s, with the number of entries left:
// a refund lowers the TAT, never below now, deletes the entry when the
// quota is full again, writes nothing on a key without an entry, and is
// allowed even on a quota overspent under a smaller Rate.
func TestQuotaRefund(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now))
	r := store.Rate{Limit: 4, Window: time.Second, Burst: 4}
	small := store.Rate{Limit: 10, Window: time.Second, Burst: 1} // T = tolerance = 100ms
	ms := time.Millisecond
	full := store.Decision{Allowed: true, Remaining: 4}
	steps := []struct {
		advance time.Duration
		r       store.Rate
		cost    int
		want    store.Decision
		entries int
	}{
		{0, r, -1, full, 0}, // a refund on a new key writes nothing
		{0, r, 4, store.Decision{Allowed: true, Remaining: 0, ResetAfter: 1000 * ms}, 1},
		{0, r, -1, store.Decision{Allowed: true, Remaining: 1, ResetAfter: 750 * ms}, 1},
		// TAT 650ms ahead, lowered by 500ms.
		{100 * ms, r, -2, store.Decision{Allowed: true, Remaining: 3, ResetAfter: 150 * ms}, 1},
		{0, r, 1, store.Decision{Allowed: true, Remaining: 2, ResetAfter: 400 * ms}, 1},
		{0, r, 1, store.Decision{Allowed: true, Remaining: 1, ResetAfter: 650 * ms}, 1},
		{0, r, 2, store.Decision{Remaining: 1, RetryAfter: 150 * ms, ResetAfter: 650 * ms}, 1},
		// More than was charged: full, not fuller, and the entry is gone.
		{0, r, -4, full, 0},
		{0, r, 0, full, 0},
		{0, r, -4, full, 0},
		{0, r, 3, store.Decision{Allowed: true, Remaining: 1, ResetAfter: 750 * ms}, 1},
		// TAT 50ms ahead: a refund of 1 fills the quota.
		{700 * ms, r, -1, full, 0},
		// Overspent under small (TAT 1s ahead, tolerance 100ms): a refund
		// is allowed though a peek is not.
		{0, r, 4, store.Decision{Allowed: true, Remaining: 0, ResetAfter: 1000 * ms}, 1},
		{0, small, -1, store.Decision{Allowed: true, Remaining: 0, ResetAfter: 900 * ms}, 1},
		{0, small, 0, store.Decision{Remaining: 0, RetryAfter: 800 * ms, ResetAfter: 900 * ms}, 1},
		{0, small, -1, store.Decision{Allowed: true, Remaining: 0, ResetAfter: 800 * ms}, 1},
		{750 * ms, small, -1, store.Decision{Allowed: true, Remaining: 1}, 0},
	}
	ctx := context.Background()
	for i, st := range steps {
		clk.Advance(st.advance)
		got, err := s.AllowN(ctx, "k", st.r, st.cost)
		require.NoError(t, err, "step %d", i)
		require.Equal(t, st.want, got, "step %d (+%v, cost %d)", i, st.advance, st.cost)
		require.Equal(t, st.entries, s.quotaCount(), "step %d: entries", i)
	}
	_, err := s.AllowN(ctx, "k", r, -5)
	require.ErrorIs(t, err, store.ErrInvalid, "refund above burst")

	// A refund on an expired entry removes it and finds the quota full.
	_, err = s.AllowN(ctx, "k", r, 2)
	require.NoError(t, err)
	clk.Advance(500 * ms)
	d, err := s.AllowN(ctx, "k", r, -1)
	require.NoError(t, err)
	require.Equal(t, full, d, "refund at the reset")
	require.Zero(t, s.quotaCount())
}

// TestQuotaEntryExpires checks that a quota's entry expires at its TAT,
// that peeks and refusals write nothing, and that quotas are kept apart
// from locks.
func TestQuotaEntryExpires(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now))
	ctx := context.Background()
	r := store.Rate{Limit: 2, Window: time.Second, Burst: 2}

	allow := func(key string, cost int) store.Decision {
		t.Helper()
		d, err := s.AllowN(ctx, key, r, cost)
		require.NoError(t, err)
		return d
	}
	require.Equal(t, store.Decision{Allowed: true, Remaining: 2}, allow("peek", 0), "peek of a new key")
	require.Zero(t, s.quotaCount(), "a peek writes nothing")
	d := allow("k", 2)
	require.True(t, d.Allowed)
	require.Equal(t, time.Second, d.ResetAfter)
	tat := s.quotaTAT("k")
	require.False(t, allow("k", 1).Allowed)
	require.Equal(t, tat, s.quotaTAT("k"), "a refusal moved the TAT")
	locks, _, _ := s.counts()
	require.Zero(t, locks, "a quota shows up as a lock")
	require.Equal(t, 1, s.Len())
	clk.Advance(d.ResetAfter - time.Microsecond)
	require.Equal(t, 1, allow("k", 0).Remaining, "1µs before reset")
	require.Equal(t, 1, s.quotaCount())
	clk.Advance(time.Microsecond)
	require.Equal(t, store.Decision{Allowed: true, Remaining: 2}, allow("k", 0), "at reset")
	require.Zero(t, s.quotaCount(), "entries after reset")
}

// TestQuotaFull checks WithMaxKeys for quotas: a new quota entry in a full
// shard fails with errFull until entries expire, while peeks, refusals and
// charges of live keys go on, and locks are counted apart.
func TestQuotaFull(t *testing.T) {
	clk := newFakeClock()
	// One shard, which one policy may fill (see TestQuotaFullPolicy).
	s := New(WithClock(clk.Now), WithMaxKeys(minPerShard), withPolicyShare(1))
	ctx := context.Background()
	r := store.Rate{Limit: 1, Window: time.Second, Burst: 2}
	allow := func(key string, cost int) store.Decision {
		t.Helper()
		d, err := s.AllowN(ctx, key, r, cost)
		require.NoError(t, err, "AllowN(%q, %d)", key, cost)
		return d
	}
	for i := range minPerShard {
		allow(fmt.Sprint("k", i), 1)
	}
	_, err := s.AllowN(ctx, "new", r, 1)
	require.ErrorIs(t, err, errFull, "new key in a full store")
	require.Equal(t, 2, allow("new", 0).Remaining, "peek in a full store")
	require.True(t, allow("k0", 1).Allowed, "live key in a full store")
	require.False(t, allow("k0", 1).Allowed, "refusal in a full store")
	mustAcquire(t, s, store.Request{Key: "lock", Token: "t", TTL: time.Minute})
	clk.Advance(time.Second) // every key but k0 is full again
	require.True(t, allow("new", 1).Allowed, "new key once others expired")
	require.LessOrEqual(t, s.quotaCount(), minPerShard)

	// Refunds never need a new entry, so a full shard never refuses one.
	s = New(WithClock(clk.Now), WithMaxKeys(minPerShard), withPolicyShare(1))
	for i := range minPerShard {
		allow(fmt.Sprint("k", i), 2)
	}
	require.Equal(t, store.Decision{Allowed: true, Remaining: 2}, allow("new", -1), "refund on a new key in a full store")
	d := allow("k0", -1)
	require.True(t, d.Allowed, "refund on a live key in a full store")
	require.Equal(t, 1, d.Remaining)
	require.Equal(t, minPerShard, s.quotaCount())
	require.Equal(t, store.Decision{Allowed: true, Remaining: 2}, allow("k0", -2), "refund filling a quota")
	require.True(t, allow("new", 1).Allowed, "new key once a refund freed an entry")
}

// TestQuotaConcurrent charges one key from many goroutines at one instant:
// exactly Burst are allowed, each seeing a different Remaining.
func TestQuotaConcurrent(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now))
	r := store.Rate{Limit: 10, Window: time.Minute, Burst: 10}
	var mu sync.Mutex
	seen := map[int]bool{}
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			d, err := s.AllowN(context.Background(), "k", r, 1)
			assert.NoError(t, err)
			if d.Allowed {
				mu.Lock()
				defer mu.Unlock()
				assert.False(t, seen[d.Remaining], "Remaining %d twice", d.Remaining)
				seen[d.Remaining] = true
			}
		})
	}
	wg.Wait()
	require.Len(t, seen, r.Burst, "allowed")
}

func mustAcquire(t *testing.T, s *Store, req store.Request) {
	t.Helper()
	g, err := s.Acquire(context.Background(), req)
	require.NoError(t, err)
	require.True(t, g.Acquired)
}

func (s *Store) quotaCount() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += len(sh.quotas.m)
		sh.mu.Unlock()
	}
	return n
}

func (s *Store) quotaTAT(key string) int64 {
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.quotas.m[key].tat
}
