package memstore

import (
	"strconv"
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

// TestFenceCountersAreBounded: the counters of a shard are bounded, and a
// full shard makes room by removing one (here within the fence TTL, none
// having expired) instead of refusing the acquisition, as it did before
// (issue 27: counters of released keys filled the store and every new
// fenced lock failed with ErrFull). The removed counter's fences stay below
// every later fence of its key, even with the clock stepped back.
func TestFenceCountersAreBounded(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now), WithFenceTTL(time.Hour), WithMaxKeys(2))
	last := map[string]int64{}
	for _, k := range []string{"a", "b", "c"} { // c's counter takes another's place
		last[k] = fenced(t, s, k)
	}
	if _, fences, _ := s.counts(); fences != 2 {
		t.Fatalf("%d fence counters, want the bound 2", fences)
	}
	if locks, _, _ := s.counts(); locks != 0 {
		t.Fatalf("%d locks left", locks)
	}
	clk.Advance(-time.Minute) // a wall clock step back
	for range 3 {
		for _, k := range []string{"a", "b", "c"} {
			f := fenced(t, s, k)
			if f <= last[k] {
				t.Fatalf("fence of %s after counters were removed = %d, want above its last %d", k, f, last[k])
			}
			last[k] = f
		}
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

// TestFencedKeysOverTimeDoNotFillTheStore: distinct fenced keys, each used
// once and never released, keep coming for far longer than the bound would
// last if counters were kept forever; once their locks and counters have
// expired they make room, and the store never answers ErrFull.
func TestFencedKeysOverTimeDoNotFillTheStore(t *testing.T) {
	clk := newFakeClock()
	const bound = 64
	s := New(WithClock(clk.Now), WithFenceTTL(time.Minute), WithMaxKeys(bound))
	const rounds, perRound = 200, 8 // 1600 keys, 25 times the bound
	for r := range rounds {
		for i := range perRound {
			key := store.Key("throttle", "submit", strconv.Itoa(r*perRound+i))
			g, err := s.Acquire(bg, store.Request{Key: key, Token: store.NewToken(), TTL: time.Second, Fence: true})
			if err != nil || !g.Acquired || g.Fence <= 0 {
				t.Fatalf("round %d, key %d: %+v, %v; want a fenced grant", r, i, g, err)
			}
		}
		clk.Advance(time.Minute) // the round's locks and counters expire
	}
	if locks, fences, _ := s.counts(); locks > bound || fences > bound {
		t.Fatalf("%d locks and %d fence counters stored, bound %d", locks, fences, bound)
	}
}

// TestHeldKeyKeepsItsCounter: a key held longer than the fence TTL (a long
// lock TTL, or a lease kept alive) while other fenced keys come and go and
// the shard has to make room keeps increasing fences across
// re-acquisitions, even when the wall clock steps back meanwhile, where a
// counter restarted from the clock would go below them: its counter may be
// removed, but a new one starts above the highest fence of every counter
// the shard removed.
func TestHeldKeyKeepsItsCounter(t *testing.T) {
	clk := newFakeClock()
	const bound = 16 // one shard
	s := New(WithClock(clk.Now), WithFenceTTL(time.Second), WithMaxKeys(bound))
	hot := store.Key("throttle", "sync", "hot")
	hold := func(ttl time.Duration) (int64, string) {
		t.Helper()
		tok := store.NewToken()
		g, err := s.Acquire(bg, store.Request{Key: hot, Token: tok, TTL: ttl, Fence: true})
		if err != nil || !g.Acquired {
			t.Fatalf("Acquire(hot): %+v, %v", g, err)
		}
		return g.Fence, tok
	}
	last, tok := hold(time.Hour)
	// Each round's check happens a minute further back than the one before
	// (so a counter restarted from the clock would go below the last
	// fence), while the rounds' other keys come and go ever later: the fake
	// clock drives expiry too, and a real store measures expiry on the
	// monotonic clock, which never steps back. Were the keys of one round
	// put in the future by a step back, the next round could find the shard
	// full of them, depending on which expired entries insertions sampled.
	checkAt, loopAt := clk.Now(), clk.Now()
	for round := range 5 {
		clk.Advance(loopAt.Sub(clk.Now()))
		// The fence TTL runs out many times over while hot is held and
		// extended, as a lease kept alive is.
		for i := range 3 * bound {
			clk.Advance(time.Second)
			outcome(t, store.OK)(s.Extend(bg, hot, tok, time.Hour))
			key := store.Key("throttle", "sync", strconv.Itoa(round*1000+i))
			g, err := s.Acquire(bg, store.Request{Key: key, Token: "t", TTL: time.Millisecond, Fence: true})
			if err != nil || !g.Acquired {
				t.Fatalf("round %d, key %d: %+v, %v", round, i, g, err)
			}
		}
		loopAt = clk.Now().Add(2 * time.Second) // past every key of this round
		checkAt = checkAt.Add(-time.Minute)
		clk.Advance(checkAt.Sub(clk.Now())) // a wall clock step back
		outcome(t, store.OK)(s.Release(bg, hot, tok))
		var f int64
		f, tok = hold(time.Hour)
		if f <= last {
			t.Fatalf("round %d: fence %d after re-acquisition, want above the last one %d", round, f, last)
		}
		last = f
	}
}

// TestFenceAfterCounterExpiredStaysAbove: a counter runs ahead of the clock
// by one per acquisition within a microsecond; once it expired and was
// removed, the next fence of its key comes from the clock, which has moved
// on by the fence TTL, and is still above every fence handed out before.
func TestFenceAfterCounterExpiredStaysAbove(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now), WithFenceTTL(time.Second), WithMaxKeys(16))
	var last int64
	for range 1000 { // all within one microsecond: the counter runs ahead
		last = fenced(t, s, "k")
	}
	if wall := clk.Now().UnixMicro(); last != wall+999 {
		t.Fatalf("last fence %d, want the clock %d plus 999", last, wall)
	}
	clk.Advance(time.Second)
	// Others fill the shard (bound 16): the last one needs the room of k's
	// expired counter, if sampling did not remove it before.
	for i := range 16 {
		fenced(t, s, "other"+strconv.Itoa(i))
	}
	if _, ok := s.shard("k").fences["k"]; ok {
		t.Fatal("k's expired counter was not removed; the test proves nothing")
	}
	clk.Advance(time.Second) // the others' counters expire, making room
	if f := fenced(t, s, "k"); f <= last || f != clk.Now().UnixMicro() {
		t.Fatalf("fence after the counter expired = %d, want the clock %d, above %d",
			f, clk.Now().UnixMicro(), last)
	}
}
