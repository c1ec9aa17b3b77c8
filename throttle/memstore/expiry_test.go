package memstore

import (
	"context"
	"errors"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

var bg = context.Background()

func acquire(t *testing.T, s *Store, key, tok string, ttl time.Duration) store.Grant {
	t.Helper()
	g, err := s.Acquire(bg, store.Request{Key: key, Token: tok, TTL: ttl})
	if err != nil {
		t.Fatalf("Acquire(%q): %v", key, err)
	}
	return g
}

func outcome(t *testing.T, want store.Outcome) func(store.Outcome, error) {
	return func(got store.Outcome, err error) {
		t.Helper()
		if err != nil || got != want {
			t.Fatalf("got %v, %v; want %v", got, err, want)
		}
	}
}

func TestExpiryWithFakeClock(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now))
	if g := acquire(t, s, "k", "a", time.Second); !g.Acquired {
		t.Fatal("first acquire refused")
	}
	clk.Advance(999 * time.Millisecond)
	if g := acquire(t, s, "k", "b", time.Second); g.Acquired || g.Remaining != time.Millisecond {
		t.Fatalf("1ms before expiry: %+v, want refused with Remaining 1ms", g)
	}
	outcome(t, store.OK)(s.Extend(bg, "k", "a", 2*time.Second))
	clk.Advance(time.Second)
	if g := acquire(t, s, "k", "b", time.Second); g.Acquired || g.Remaining != time.Second {
		t.Fatalf("after Extend: %+v, want refused with Remaining 1s", g)
	}
	clk.Advance(time.Second)
	outcome(t, store.Gone)(s.Extend(bg, "k", "a", time.Second))
	outcome(t, store.Gone)(s.Release(bg, "k", "a"))
	if g := acquire(t, s, "k", "b", time.Second); !g.Acquired {
		t.Fatalf("after expiry: %+v, want acquired", g)
	}
	outcome(t, store.HeldByOther)(s.Release(bg, "k", "a"))
}

func TestTTLRoundsUpToMillisecond(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now))
	acquire(t, s, "k", "a", 1500*time.Microsecond)
	clk.Advance(time.Microsecond)
	if g := acquire(t, s, "k", "b", time.Second); g.Remaining != 2*time.Millisecond {
		t.Fatalf("Remaining = %v, want 2ms (1.5ms rounded up, then up again)", g.Remaining)
	}
	clk.Advance(1999 * time.Microsecond)
	if g := acquire(t, s, "k", "b", time.Second); !g.Acquired {
		t.Fatalf("after 2ms: %+v, want acquired", g)
	}
}

func TestReentryRefreshesTTL(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now))
	req := store.Request{Key: "k", Token: "owner", TTL: time.Second, Reentrant: true}
	if _, err := s.Acquire(bg, req); err != nil {
		t.Fatal(err)
	}
	clk.Advance(900 * time.Millisecond)
	if g, err := s.Acquire(bg, req); err != nil || g.Holds != 2 {
		t.Fatalf("re-entry: %+v, %v", g, err)
	}
	clk.Advance(900 * time.Millisecond)
	if g := acquire(t, s, "k", "other", time.Second); g.Acquired || g.Remaining != 100*time.Millisecond {
		t.Fatalf("1.8s after first acquire: %+v, want held 100ms more", g)
	}
	outcome(t, store.StillHeld)(s.Release(bg, "k", "owner"))
	clk.Advance(100 * time.Millisecond)
	outcome(t, store.Gone)(s.Release(bg, "k", "owner"))
}

func TestInvalidArguments(t *testing.T) {
	s := New()
	for _, req := range []store.Request{
		{Key: "k", Token: "t", TTL: 0},
		{Key: "k", Token: "t", TTL: -time.Second},
		{Key: "k", Token: "", TTL: time.Second},
	} {
		if _, err := s.Acquire(bg, req); !errors.Is(err, throttle.ErrInvalid) {
			t.Errorf("Acquire(%+v) error = %v, want ErrInvalid", req, err)
		}
	}
	acquire(t, s, "k", "t", time.Second)
	if _, err := s.Extend(bg, "k", "t", 0); !errors.Is(err, throttle.ErrInvalid) {
		t.Errorf("Extend with ttl 0: %v, want ErrInvalid", err)
	}
	if locks, _, _ := s.counts(); locks != 1 {
		t.Errorf("%d locks stored, want 1: invalid requests must store nothing", locks)
	}
}

func TestExpiredEntriesAreSwept(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now))
	const n = 10000
	for i := range n {
		acquire(t, s, store.Key("p", "sweep", strconv.Itoa(i)), "t", time.Second)
	}
	clk.Advance(time.Second)
	// Fresh one-off keys: every insertion samples a few entries, so the
	// expired ones go away without anyone touching them again.
	for i := range 4 * n {
		tok := "u"
		key := store.Key("p", "fresh", strconv.Itoa(i))
		acquire(t, s, key, tok, time.Hour)
		outcome(t, store.OK)(s.Release(bg, key, tok))
	}
	if locks, _, _ := s.counts(); locks > n/10 {
		t.Fatalf("%d of %d expired locks still stored after %d insertions", locks, n, 4*n)
	}
}

func TestHugeTTLDoesNotOverflow(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now))
	acquire(t, s, "k", "a", time.Duration(math.MaxInt64))
	clk.Advance(100 * 365 * 24 * time.Hour)
	if g := acquire(t, s, "k", "b", time.Second); g.Acquired || g.Remaining <= 0 {
		t.Fatalf("a lock with the largest TTL: %+v, want still held", g)
	}
	outcome(t, store.OK)(s.Extend(bg, "k", "a", time.Duration(math.MaxInt64)))
}

func TestTooManyHolds(t *testing.T) {
	s := New()
	req := store.Request{Key: "k", Token: "o", TTL: time.Minute, Reentrant: true}
	s.Acquire(bg, req)
	sh, tag := s.locate("k")
	i, _ := sh.locks.lookup("k", tag)
	sh.locks.at(i).l.holds = math.MaxInt32
	if _, err := s.Acquire(bg, req); !errors.Is(err, throttle.ErrInvalid) {
		t.Fatalf("re-entry past the hold limit: %v, want ErrInvalid", err)
	}
}
