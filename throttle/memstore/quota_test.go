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

// TestQuotaEvictionOrder (issue 36): a new quota in a full shard is never
// refused; room is made by dropping a refilled quota first, the same as
// none, even a recently used one, then the least recently decided quota
// (a charge, a refusal and a peek each count as use), and never a held
// lock. Peeks, refusals and refunds need no room. Before, the new quota
// failed with errFull.
func TestQuotaEvictionOrder(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now), WithMaxKeys(minPerShard)) // one shard of 16
	ctx := context.Background()
	r := store.Rate{Limit: 1, Window: time.Second, Burst: 2}
	allow := func(key string, r store.Rate, cost int) store.Decision {
		t.Helper()
		clk.Advance(time.Millisecond)
		d, err := s.AllowN(ctx, key, r, cost)
		require.NoError(t, err, "AllowN(%q, %d)", key, cost)
		return d
	}
	kept := func(key string) bool { _, ok := s.shards[0].quotas.m[key]; return ok }
	mustAcquire(t, s, store.Request{Key: "lock", Token: "t", TTL: time.Hour})
	for i := range minPerShard {
		allow(fmt.Sprint("k", i), r, 1)
	}
	// k0 charged again, k1 refused, k2 peeked: k3 is now the least recent.
	require.True(t, allow("k0", r, 1).Allowed)
	require.False(t, allow("k1", r, 2).Allowed, "k1 refused")
	require.Equal(t, 1, allow("k2", r, 0).Remaining, "peek")
	require.True(t, allow("new1", r, 1).Allowed, "a new quota in a full store")
	require.False(t, kept("k3"), "the least recently used quota is the one dropped")
	for _, k := range []string{"k0", "k1", "k2", "k4", "k15", "new1"} {
		require.True(t, kept(k), "%s dropped out of order", k)
	}
	require.False(t, allow("k0", r, 1).Allowed, "k0's spent quota is kept")
	require.False(t, kept("k3"))

	// k9 under a short rate refills in 10ms; used last, it still goes first.
	short := store.Rate{Limit: 1, Window: 10 * time.Millisecond, Burst: 1}
	require.NoError(t, s.Delete(ctx, "k9"))
	require.True(t, allow("k9", short, 1).Allowed)
	require.Zero(t, allow("k9", short, 0).Remaining, "peek of k9, spent")
	clk.Advance(20 * time.Millisecond)
	require.True(t, allow("new2", r, 1).Allowed)
	require.False(t, kept("k9"), "the refilled quota is dropped first")
	require.True(t, kept("k4"), "the least recently used quota went before the refilled one")

	// Refunds and peeks of unknown keys need no room; a flood of new
	// quotas is never refused, and the lock stays held.
	require.Equal(t, store.Decision{Allowed: true, Remaining: 2}, allow("other", r, -1), "refund on a new key")
	for i := range 100 {
		require.True(t, allow(fmt.Sprint("flood", i), r, 1).Allowed, "flood %d", i)
	}
	require.Equal(t, minPerShard, s.quotaCount())
	g, err := s.Acquire(ctx, store.Request{Key: "lock", Token: "u", TTL: time.Minute})
	require.NoError(t, err)
	require.False(t, g.Acquired, "a held lock was evicted")
	s.checkPolicyCounts(t)
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
