package memstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

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
		err := tc.r.Check(tc.cost)
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, store.ErrInvalid)) {
			t.Errorf("%+v.Check(%d) = %v, want ok=%v", tc.r, tc.cost, err, tc.ok)
		}
	}
	if err := ok.Check(-5); err == nil || !strings.Contains(err.Error(), "refund 5 is above burst 4") {
		t.Errorf("Check(-5) = %v, want a refund above burst", err)
	}
	if got := (store.Rate{Limit: 3, Window: time.Second, Burst: 3}).Interval(); got != 333333*time.Microsecond {
		t.Errorf("Interval of 3/s = %v, want 333.333ms", got)
	}
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
		if err != nil || got != st.want {
			t.Fatalf("step %d (+%v, cost %d): %+v, %v; want %+v", i, st.advance, st.cost, got, err, st.want)
		}
	}
	if _, err := s.AllowN(ctx, "k", r, 5); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("cost above burst: %v, want ErrInvalid", err)
	}
	if _, err := s.AllowN(ctx, "", r, 1); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("empty key: %v, want ErrInvalid", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.AllowN(cctx, "k", r, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("done context: %v", err)
	}
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
		if err != nil || got != st.want {
			t.Fatalf("step %d (+%v, cost %d): %+v, %v; want %+v", i, st.advance, st.cost, got, err, st.want)
		}
		if n := s.quotaCount(); n != st.entries {
			t.Fatalf("step %d (+%v, cost %d): %d entries, want %d", i, st.advance, st.cost, n, st.entries)
		}
	}
	if _, err := s.AllowN(ctx, "k", r, -5); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("refund above burst: %v, want ErrInvalid", err)
	}

	// A refund on an expired entry removes it and finds the quota full.
	if _, err := s.AllowN(ctx, "k", r, 2); err != nil {
		t.Fatal(err)
	}
	clk.Advance(500 * ms)
	if d, err := s.AllowN(ctx, "k", r, -1); err != nil || d != full || s.quotaCount() != 0 {
		t.Fatalf("refund at the reset: %+v, %v, %d entries", d, err, s.quotaCount())
	}
}

// TestQuotaEntryExpires checks that a quota's entry expires at its TAT,
// that peeks and refusals write nothing, and that quotas are kept apart
// from locks.
func TestQuotaEntryExpires(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now))
	ctx := context.Background()
	r := store.Rate{Limit: 2, Window: time.Second, Burst: 2}

	if d, err := s.AllowN(ctx, "peek", r, 0); err != nil || d != (store.Decision{Allowed: true, Remaining: 2}) {
		t.Fatalf("peek of a new key: %+v, %v", d, err)
	}
	if n := s.quotaCount(); n != 0 {
		t.Fatalf("a peek wrote %d entries", n)
	}
	d, err := s.AllowN(ctx, "k", r, 2)
	if err != nil || !d.Allowed || d.ResetAfter != time.Second {
		t.Fatalf("charge: %+v, %v", d, err)
	}
	tat := s.quotaTAT("k")
	if d, _ := s.AllowN(ctx, "k", r, 1); d.Allowed || s.quotaTAT("k") != tat {
		t.Fatalf("refusal: %+v, TAT moved from %v to %v", d, tat, s.quotaTAT("k"))
	}
	if locks, _, _ := s.counts(); locks != 0 || s.Len() != 1 {
		t.Fatal("a quota shows up as a lock")
	}
	clk.Advance(d.ResetAfter - time.Microsecond)
	if d, _ := s.AllowN(ctx, "k", r, 0); d.Remaining != 1 || s.quotaCount() != 1 {
		t.Fatalf("1µs before reset: %+v, %d entries", d, s.quotaCount())
	}
	clk.Advance(time.Microsecond)
	if d, _ := s.AllowN(ctx, "k", r, 0); d != (store.Decision{Allowed: true, Remaining: 2}) {
		t.Fatalf("at reset: %+v", d)
	}
	if n := s.quotaCount(); n != 0 {
		t.Fatalf("%d entries after reset, want 0", n)
	}
}

// TestQuotaFull checks WithMaxKeys for quotas: a new quota entry in a full
// shard fails with ErrFull until entries expire, while peeks, refusals and
// charges of live keys go on, and locks are counted apart.
func TestQuotaFull(t *testing.T) {
	clk := newFakeClock()
	// One shard, which one policy may fill (see TestQuotaFullPolicy).
	s := New(WithClock(clk.Now), WithMaxKeys(minPerShard), WithPolicyShare(1))
	ctx := context.Background()
	r := store.Rate{Limit: 1, Window: time.Second, Burst: 2}
	for i := range minPerShard {
		if _, err := s.AllowN(ctx, fmt.Sprint("k", i), r, 1); err != nil {
			t.Fatalf("key %d: %v", i, err)
		}
	}
	if _, err := s.AllowN(ctx, "new", r, 1); !errors.Is(err, ErrFull) {
		t.Fatalf("new key in a full store: %v, want ErrFull", err)
	}
	if d, err := s.AllowN(ctx, "new", r, 0); err != nil || d.Remaining != 2 {
		t.Fatalf("peek in a full store: %+v, %v", d, err)
	}
	if d, err := s.AllowN(ctx, "k0", r, 1); err != nil || !d.Allowed {
		t.Fatalf("live key in a full store: %+v, %v", d, err)
	}
	if d, err := s.AllowN(ctx, "k0", r, 1); err != nil || d.Allowed {
		t.Fatalf("refusal in a full store: %+v, %v", d, err)
	}
	mustAcquire(t, s, store.Request{Key: "lock", Token: "t", TTL: time.Minute})
	clk.Advance(time.Second) // every key but k0 is full again
	if d, err := s.AllowN(ctx, "new", r, 1); err != nil || !d.Allowed {
		t.Fatalf("new key once others expired: %+v, %v", d, err)
	}
	if n := s.quotaCount(); n > minPerShard {
		t.Fatalf("%d quota entries, bound %d", n, minPerShard)
	}

	// Refunds never need a new entry, so a full shard never refuses one.
	s = New(WithClock(clk.Now), WithMaxKeys(minPerShard), WithPolicyShare(1))
	for i := range minPerShard {
		if _, err := s.AllowN(ctx, fmt.Sprint("k", i), r, 2); err != nil {
			t.Fatalf("key %d: %v", i, err)
		}
	}
	if d, err := s.AllowN(ctx, "new", r, -1); err != nil || d != (store.Decision{Allowed: true, Remaining: 2}) {
		t.Fatalf("refund on a new key in a full store: %+v, %v", d, err)
	}
	if d, err := s.AllowN(ctx, "k0", r, -1); err != nil || !d.Allowed || d.Remaining != 1 || s.quotaCount() != minPerShard {
		t.Fatalf("refund on a live key in a full store: %+v, %v, %d entries", d, err, s.quotaCount())
	}
	if d, err := s.AllowN(ctx, "k0", r, -2); err != nil || d != (store.Decision{Allowed: true, Remaining: 2}) {
		t.Fatalf("refund filling a quota in a full store: %+v, %v", d, err)
	}
	if d, err := s.AllowN(ctx, "new", r, 1); err != nil || !d.Allowed {
		t.Fatalf("new key once a refund freed an entry: %+v, %v", d, err)
	}
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
			if err != nil {
				t.Error(err)
				return
			}
			if d.Allowed {
				mu.Lock()
				defer mu.Unlock()
				if seen[d.Remaining] {
					t.Errorf("Remaining %d twice", d.Remaining)
				}
				seen[d.Remaining] = true
			}
		})
	}
	wg.Wait()
	if len(seen) != r.Burst {
		t.Fatalf("%d allowed, want %d", len(seen), r.Burst)
	}
}

func mustAcquire(t *testing.T, s *Store, req store.Request) {
	t.Helper()
	if g, err := s.Acquire(context.Background(), req); err != nil || !g.Acquired {
		t.Fatalf("acquire: %+v, %v", g, err)
	}
}

func (s *Store) quotaCount() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += len(sh.quotas)
		sh.mu.Unlock()
	}
	return n
}

func (s *Store) quotaTAT(key string) int64 {
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.quotas[key].tat
}
