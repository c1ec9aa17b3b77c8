package memstore

import (
	"strconv"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// queued returns how many entries the store's rings hold, and how many of
// them are live locks (the others, cleared, wait to reach a ring's head).
func (s *Store) queued() (n, keyed int) {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for k := range sh.locks.rings {
			g := &sh.locks.rings[k]
			n += int(g.tail - g.head)
			for seq := g.head; seq != g.tail; seq++ {
				if g.at(seq).key != "" {
					keyed++
				}
			}
		}
		sh.mu.Unlock()
	}
	return n, keyed
}

// TestExpiryQueueClasses checks that locks of a short TTL are removed once
// expired although longer ones, released long before they would expire,
// were queued before them: each TTL class has its own queue.
func TestExpiryQueueClasses(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now))
	for i := range 1000 {
		key := store.Key("p", "job", strconv.Itoa(i))
		acquire(t, s, key, "t", time.Hour)
		outcome(t, store.OK)(s.Release(bg, key, "t"))
	}
	for i := range 1000 {
		acquire(t, s, store.Key("p", "submit", strconv.Itoa(i)), "t", time.Second)
	}
	clk.Advance(time.Second)
	for i := range 2000 {
		acquire(t, s, store.Key("p", "later", strconv.Itoa(i)), "t", time.Second)
	}
	if locks, _, _ := s.counts(); locks > 2000+50 {
		t.Fatalf("%d locks stored, want about the 2000 live ones: the expired ones queued behind the hour-long ones stayed", locks)
	}
}

// TestExpiryQueueExtended checks that a lock extended (or re-entered)
// after its first expiry was queued is not removed at that expiry, and is
// removed at its new one.
func TestExpiryQueueExtended(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now), WithMaxKeys(16)) // one shard: every acquisition reclaims the extended key's queue
	acquire(t, s, "k", "a", time.Second)
	outcome(t, store.OK)(s.Extend(bg, "k", "a", time.Minute))
	reentrant := store.Request{Key: "r", Token: "o", TTL: time.Second, Reentrant: true}
	if _, err := s.Acquire(bg, reentrant); err != nil {
		t.Fatal(err)
	}
	reentrant.TTL = time.Minute
	if _, err := s.Acquire(bg, reentrant); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second)
	for i := range 10 {
		key := "other" + strconv.Itoa(i)
		acquire(t, s, key, "t", time.Hour)
		outcome(t, store.OK)(s.Release(bg, key, "t"))
	}
	for _, key := range []string{"k", "r"} {
		if g := acquire(t, s, key, "b", time.Second); g.Acquired {
			t.Fatalf("%s: taken by another token after its first expiry: the extension was lost", key)
		}
	}
	clk.Advance(time.Minute)
	for i := range 10 {
		key := "late" + strconv.Itoa(i)
		acquire(t, s, key, "t", time.Hour)
		outcome(t, store.OK)(s.Release(bg, key, "t"))
	}
	if locks, _, _ := s.counts(); locks != 0 {
		t.Fatalf("%d locks stored a minute later, want none", locks)
	}
}

// TestExpiryQueueBounded checks that the queues hold about the live locks'
// expiries, not all that were ever queued.
func TestExpiryQueueBounded(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now))
	for i := range 100_000 {
		acquire(t, s, store.Key("p", "submit", strconv.Itoa(i)), "t", 10*time.Millisecond)
		clk.Advance(10 * time.Microsecond) // 1000 live locks
	}
	if n, _ := s.queued(); n > 2000 {
		t.Fatalf("%d expiries queued for about 1000 live locks", n)
	}
	if locks, _, _ := s.counts(); locks > 2000 {
		t.Fatalf("%d locks stored for about 1000 live ones", locks)
	}
}

// TestExpiryQueueReleased checks that a released lock's queued expiry does
// not keep its key: its key is cleared, and the entry dropped once no
// entry with a key follows it.
func TestExpiryQueueReleased(t *testing.T) {
	s := New(WithMaxKeys(16)) // one shard, one queue
	for i := range 100 {
		key := "job" + strconv.Itoa(i)
		acquire(t, s, key, "t", time.Hour)
		outcome(t, store.OK)(s.Release(bg, key, "t"))
	}
	if n, _ := s.queued(); n != 0 {
		t.Fatalf("%d expiries queued after acquisitions each released at once, want 0", n)
	}
	acquire(t, s, "a", "t", time.Hour)
	acquire(t, s, "b", "t", time.Hour)
	outcome(t, store.OK)(s.Release(bg, "a", "t"))
	if n, keyed := s.queued(); n != 2 || keyed != 1 {
		t.Fatalf("%d expiries queued, %d with their key; want 2, 1 (b's)", n, keyed)
	}
	outcome(t, store.OK)(s.Release(bg, "b", "t"))
	if n, _ := s.queued(); n != 0 {
		t.Fatalf("%d expiries queued once b was released too, want 0", n)
	}
}
