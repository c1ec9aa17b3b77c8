package nearcache

import (
	"strconv"
	"sync"
	"testing"
	"time"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newCache(size int) (*Cache, *clock) {
	clk := &clock{t: time.Unix(1e9, 0)}
	c := New(size, clk.now)
	c.Ready(true)
	return c, clk
}

func TestPutGetExpires(t *testing.T) {
	c, clk := newCache(1000)
	gen, ok := c.Stamp("k")
	if !ok {
		t.Fatal("a ready cache gave no stamp")
	}
	if !c.Put("k", Entry{Until: clk.now().Add(time.Second)}, gen) {
		t.Fatal("Put refused a fresh stamp")
	}
	if _, _, ok := c.Get("k"); !ok {
		t.Fatal("no entry after Put")
	}
	clk.add(time.Second)
	if _, _, ok := c.Get("k"); ok {
		t.Fatal("an entry outlived its Until")
	}
	if c.Put("k", Entry{Until: clk.now()}, gen) {
		t.Fatal("Put kept an entry already expired")
	}
}

// An invalidation between Stamp and Put (the remote call's round trip)
// must win: the refusal may predate the change.
func TestInvalidationRacingThePut(t *testing.T) {
	c, clk := newCache(1000)
	gen, _ := c.Stamp("k")
	c.Invalidate("k")
	if c.Put("k", Entry{Until: clk.now().Add(time.Hour)}, gen) {
		t.Fatal("Put kept a refusal older than an invalidation of its key")
	}
	gen, _ = c.Stamp("k")
	c.Forget("k") // this process released it: no entry to drop, yet the Put must lose
	if c.Put("k", Entry{Until: clk.now().Add(time.Hour)}, gen) {
		t.Fatal("Put kept a refusal older than this process's own change of its key")
	}
	gen, _ = c.Stamp("k")
	c.Ready(false) // the tracking connection was lost
	c.Ready(true)
	if c.Put("k", Entry{Until: clk.now().Add(time.Hour)}, gen) {
		t.Fatal("Put kept a refusal older than a lost tracking connection")
	}
	gen, _ = c.Stamp("k")
	c.Clear()
	if c.Put("k", Entry{Until: clk.now().Add(time.Hour)}, gen) {
		t.Fatal("Put kept a refusal older than a Clear (FLUSHALL)")
	}
}

func TestNotReadyKeepsNothing(t *testing.T) {
	c := New(10, nil)
	if _, ok := c.Stamp("k"); ok {
		t.Fatal("a cache never ready gave a stamp")
	}
	if c.Put("k", Entry{Until: time.Now().Add(time.Hour)}, 0) {
		t.Fatal("a cache never ready kept an entry")
	}
}

func TestInvalidateAndClearCount(t *testing.T) {
	c, clk := newCache(1000)
	for i := range 10 {
		k := strconv.Itoa(i)
		gen, _ := c.Stamp(k)
		c.Put(k, Entry{Until: clk.now().Add(time.Hour)}, gen)
	}
	c.Invalidate("0", "absent")
	c.Forget("1")
	if _, _, ok := c.Get("1"); ok {
		t.Fatal("a forgotten key is still refused")
	}
	if _, _, ok := c.Get("0"); ok {
		t.Fatal("an invalidated key is still refused")
	}
	c.Ready(false)
	if _, _, ok := c.Get("5"); ok {
		t.Fatal("an entry survived a lost tracking connection")
	}
	if st := c.Stats(); st.Invalidations != 10 || st.Entries != 0 {
		t.Fatalf("stats %+v, want 10 invalidations and no entry", st)
	}
}

func TestBounded(t *testing.T) {
	c, clk := newCache(shards * 2)
	for i := range 10_000 {
		k := strconv.Itoa(i)
		gen, _ := c.Stamp(k)
		if !c.Put(k, Entry{Until: clk.now().Add(time.Duration(i%3) * time.Second)}, gen) && i%3 != 0 {
			t.Fatalf("Put %d refused", i)
		}
	}
	if n := c.Stats().Entries; n > shards*2 {
		t.Fatalf("%d entries, bound %d", n, shards*2)
	}
}
