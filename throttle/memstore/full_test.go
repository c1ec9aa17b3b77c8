package memstore

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

func TestFullStoreRefusesNewKeys(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now), WithMaxKeys(4))
	for i := range 4 {
		acquire(t, s, "k"+strconv.Itoa(i), "t", time.Second)
	}
	_, err := s.Acquire(bg, store.Request{Key: "new", Token: "t", TTL: time.Second})
	if !errors.Is(err, ErrFull) {
		t.Fatalf("Acquire of a fifth key: %v, want ErrFull", err)
	}
	// Held keys still answer as usual.
	if g := acquire(t, s, "k0", "other", time.Second); g.Acquired || g.Remaining != time.Second {
		t.Fatalf("contender on a full store: %+v, want refused", g)
	}
	outcome(t, store.OK)(s.Extend(bg, "k1", "t", time.Minute))

	outcome(t, store.OK)(s.Release(bg, "k0", "t"))
	if g := acquire(t, s, "new", "t", time.Second); !g.Acquired {
		t.Fatal("a released slot was not reused")
	}
	// Once the locks expired, a full shard sweeps them.
	clk.Advance(time.Second)
	for i := range 3 {
		if g := acquire(t, s, "later"+strconv.Itoa(i), "t", time.Second); !g.Acquired {
			t.Fatalf("key %d after expiry was refused", i)
		}
	}
	// k1 was extended to a minute and still counts.
	if _, err := s.Acquire(bg, store.Request{Key: "one-too-many", Token: "t", TTL: time.Second}); !errors.Is(err, ErrFull) {
		t.Fatalf("fifth live key: %v, want ErrFull", err)
	}
	if locks, _, _ := s.counts(); locks != 4 {
		t.Fatalf("%d locks stored, want the bound 4", locks)
	}
}

func TestFullStoreIsAStoreErrorForTheLimiter(t *testing.T) {
	s := New(WithMaxKeys(1))
	l, err := throttle.New(s, throttle.Policy{Name: "full", WhenStoreFails: throttle.FailClosed})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(bg, "a"); err != nil {
		t.Fatal(err)
	}
	_, err = l.Acquire(bg, "b")
	if !errors.Is(err, throttle.ErrStore) || !errors.Is(err, ErrFull) {
		t.Fatalf("Acquire on a full store: %v, want a store error wrapping ErrFull", err)
	}
	if lease, err := l.Admit(bg, "c"); lease != nil || !errors.Is(err, throttle.ErrStore) {
		t.Fatalf("Admit on a full store under FailClosed: %v, want a store error", err)
	}
}

func TestMaxKeysAcrossShards(t *testing.T) {
	const max = 1 << 12
	s := New(WithMaxKeys(max))
	full := 0
	for i := range 2 * max {
		_, err := s.Acquire(context.Background(), store.Request{Key: strconv.Itoa(i), Token: "t", TTL: time.Hour})
		if errors.Is(err, ErrFull) {
			full++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	locks, _, _ := s.counts()
	// The bound is split over the shards, so the store may refuse a
	// little before max; it never holds more.
	if locks > max || locks < max*3/4 || full != 2*max-locks {
		t.Fatalf("stored %d locks and refused %d of %d with bound %d", locks, full, 2*max, max)
	}
}
