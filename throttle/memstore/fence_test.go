package memstore

import (
	"errors"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

func fenced(t *testing.T, s *Store, key string) int64 {
	t.Helper()
	g, err := s.Acquire(bg, store.Request{Key: key, Token: "t", TTL: time.Second, Fence: true})
	if err != nil || !g.Acquired {
		t.Fatalf("fenced Acquire(%q): %+v, %v", key, g, err)
	}
	outcome(t, store.OK)(s.Release(bg, key, "t"))
	return g.Fence
}

func TestFenceFollowsClockAndCounter(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now))
	wall := clk.Now().UnixMicro()
	if f := fenced(t, s, "k"); f != wall {
		t.Fatalf("first fence = %d, want the clock in microseconds %d", f, wall)
	}
	// The clock does not move: the counter does.
	for i := int64(1); i <= 3; i++ {
		if f := fenced(t, s, "k"); f != wall+i {
			t.Fatalf("fence %d = %d, want %d", i, f, wall+i)
		}
	}
	// The clock moves past the counter: the fence follows the clock.
	clk.Advance(time.Second)
	if f := fenced(t, s, "k"); f != wall+1e6 {
		t.Fatalf("fence after 1s = %d, want %d", f, wall+int64(1e6))
	}
	// Another key has its own counter.
	if f := fenced(t, s, "other"); f != wall+1e6 {
		t.Fatalf("fence of another key = %d, want %d", f, wall+int64(1e6))
	}
}

func TestFenceSurvivesBackwardClockWhileKept(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now), WithFenceTTL(time.Hour))
	f1 := fenced(t, s, "k")
	clk.Advance(-time.Minute) // a wall clock step back
	if f2 := fenced(t, s, "k"); f2 != f1+1 {
		t.Fatalf("fence after the clock stepped back = %d, want %d", f2, f1+1)
	}
}

func TestFenceCountersAreDropped(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now), WithFenceTTL(time.Hour), WithMaxKeys(16))
	for _, k := range []string{"a", "b", "c"} {
		fenced(t, s, k)
	}
	if _, fences, _ := s.counts(); fences != 3 {
		t.Fatalf("%d fence counters, want 3", fences)
	}
	clk.Advance(time.Hour)
	fenced(t, s, "d") // samples the others, which have expired
	if _, fences, _ := s.counts(); fences != 1 {
		t.Fatalf("%d fence counters an hour later, want only d's", fences)
	}
}

func TestFenceCountersAreBounded(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now), WithFenceTTL(time.Hour), WithMaxKeys(2))
	fenced(t, s, "a")
	fenced(t, s, "b")
	_, err := s.Acquire(bg, store.Request{Key: "c", Token: "t", TTL: time.Second, Fence: true})
	if !errors.Is(err, ErrFull) {
		t.Fatalf("third fenced key within the fence TTL: %v, want ErrFull", err)
	}
	if locks, _, _ := s.counts(); locks != 0 {
		t.Fatalf("a refused acquisition left %d locks", locks)
	}
	// An unfenced acquisition does not need a counter.
	if g := acquire(t, s, "c", "t", time.Second); !g.Acquired {
		t.Fatal("unfenced acquire refused")
	}
	outcome(t, store.OK)(s.Release(bg, "c", "t"))
	clk.Advance(time.Hour)
	if f := fenced(t, s, "c"); f != clk.Now().UnixMicro() {
		t.Fatalf("fence after the counters expired = %d", f)
	}
}

func TestFenceAskedOnlyAtReentry(t *testing.T) {
	s := New()
	req := store.Request{Key: "k", Token: "o", TTL: time.Second, Reentrant: true}
	g1, _ := s.Acquire(bg, req)
	req.Fence = true
	g2, _ := s.Acquire(bg, req)
	g3, _ := s.Acquire(bg, req)
	if g1.Fence != 0 || g2.Fence <= 0 || g3.Fence != g2.Fence || g3.Holds != 3 {
		t.Fatalf("grants %+v %+v %+v: want no fence, then one fence kept", g1, g2, g3)
	}
}

// TestFenceTTLOption: WithFenceTTL has the bounds of redisstore.WithFenceTTL:
// d <= 0 means the default, and less than a second is raised to a second.
func TestFenceTTLOption(t *testing.T) {
	for opt, want := range map[time.Duration]time.Duration{
		time.Hour:             time.Hour,
		10 * time.Millisecond: time.Second,
		0:                     DefaultFenceTTL,
		-time.Second:          DefaultFenceTTL,
	} {
		if got := New(WithFenceTTL(opt)).fenceTTL; got != want {
			t.Errorf("WithFenceTTL(%v): fence TTL %v, want %v", opt, got, want)
		}
	}
}
