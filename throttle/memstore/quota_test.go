package memstore

import (
	"context"
	"errors"
	"fmt"
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
		{ok, -1, false},
		{ok, 5, false},
	} {
		err := tc.r.Check(tc.cost)
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, store.ErrInvalid)) {
			t.Errorf("%+v.Check(%d) = %v, want ok=%v", tc.r, tc.cost, err, tc.ok)
		}
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
	if _, held := s.shard("k").locks["k"]; held || s.Len() != 0 {
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
	s := New(WithClock(clk.Now), WithMaxKeys(minPerShard)) // one shard
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
