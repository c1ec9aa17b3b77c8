package memstore

import (
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// TestTableModel drives a shard's table and a map with the same random
// insertions, moves, changes in place, deletions, sweeps and reclaims, and
// compares them after every step. Tags come from a few bits only, so that
// keys collide on their home slot, runs are long and wrap round the end of
// the index: what backward-shift deletion and the sweep must get right.
// TTLs fall in a few classes, so that locks move between rings.
func TestTableModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ttls := []time.Duration{1, 3, 40, 100}
	for round := range 20 {
		var sh shard
		tbl := &sh.locks
		model := map[string]lock{}
		tags := map[string]uint32{}
		keys := 8 + round*10
		tagOfKey := func(k string) uint32 {
			tg, ok := tags[k]
			if !ok {
				// Few distinct homes: the top bits pick the home.
				tg = tagOf(uint64(rng.IntN(4)) << 62)
				if rng.IntN(2) == 0 {
					tg = tagOf(rng.Uint64())
				}
				tags[k] = tg
			}
			return tg
		}
		for step := range 3000 {
			k := "k" + strconv.Itoa(rng.IntN(keys))
			tg := tagOfKey(k)
			now := time.Duration(rng.IntN(100))
			switch op := rng.IntN(20); {
			case op < 8:
				ttl := ttls[rng.IntN(len(ttls))]
				l := lock{token: k, expires: now + ttl}
				if i, ok := tbl.lookup(k, tg); ok {
					tbl.move(i, l, ttl)
				} else if !tbl.insert(k, tg, l, ttl) {
					t.Fatal("insert refused")
				}
				model[k] = l
			case op < 10:
				if i, ok := tbl.lookup(k, tg); ok {
					l := model[k]
					l.holds++
					tbl.at(i).l = l
					model[k] = l
				}
			case op < 17:
				if i, ok := tbl.lookup(k, tg); ok {
					tbl.remove(i)
				}
				delete(model, k)
			case op < 18:
				low := time.Duration(math.MaxInt64)
				for mk, l := range model {
					if l.expires <= now {
						delete(model, mk)
					} else {
						low = min(low, l.expires)
					}
				}
				if got := tbl.sweep(now); got != low {
					t.Fatalf("round %d step %d: sweep returned %v, want %v", round, step, got, low)
				}
			default:
				sh.reclaim(now)
				for mk, l := range model {
					if _, ok := tbl.get(mk, tags[mk]); !ok {
						if l.expires > now {
							t.Fatalf("round %d step %d: reclaim at %v removed %q, which expires at %v", round, step, now, mk, l.expires)
						}
						delete(model, mk)
					}
				}
			}
			checkTable(t, tbl, model, tags)
		}
	}
}

// checkTable fails unless tbl holds exactly model's locks, each found from
// its tag, and every live entry of its rings is one of them.
func checkTable(t *testing.T, tbl *table, model map[string]lock, tags map[string]uint32) {
	t.Helper()
	if tbl.n != len(model) {
		t.Fatalf("table holds %d entries, model %d", tbl.n, len(model))
	}
	occupied := 0
	for _, s := range tbl.index {
		if s != 0 {
			occupied++
		}
	}
	if occupied != tbl.n {
		t.Fatalf("%d occupied slots, n = %d", occupied, tbl.n)
	}
	live := 0
	for k := range tbl.rings {
		g := &tbl.rings[k]
		if places := len(g.blocks) * int(g.emask+1); int(g.tail-g.head) > places {
			t.Fatalf("ring %d: %d entries in %d places", k, g.tail-g.head, places)
		}
		for seq := g.head; seq != g.tail; seq++ {
			if e := g.at(seq); e.key != "" {
				live++
				if i, ok := tbl.slotOfRef(e.tag, refOf(k, seq)); !ok || tbl.at(i) != e {
					t.Fatalf("live entry %q of ring %d has no index slot", e.key, k)
				}
			}
		}
	}
	if live != tbl.n {
		t.Fatalf("%d live entries in the rings, n = %d", live, tbl.n)
	}
	for k, tg := range tags {
		l, ok := tbl.get(k, tg)
		want, wantOK := model[k]
		if ok != wantOK || l != want {
			t.Fatalf("get(%q) = %+v, %v; want %+v, %v", k, l, ok, want, wantOK)
		}
	}
}

// TestTableGrows checks that an index keeps a free quarter as it grows, and
// that every key is found afterwards although its ring grew too.
func TestTableGrows(t *testing.T) {
	var tbl table
	const n = 10_000
	for i := range n {
		k := strconv.Itoa(i)
		if !tbl.insert(k, tagOf(uint64(i)*0x9e3779b97f4a7c15), lock{token: k}, time.Second) {
			t.Fatal("insert refused")
		}
		if 4*tbl.n > 3*len(tbl.index) {
			t.Fatalf("%d entries in %d slots: more than three quarters full", tbl.n, len(tbl.index))
		}
	}
	for i := range n {
		k := strconv.Itoa(i)
		if l, ok := tbl.get(k, tagOf(uint64(i)*0x9e3779b97f4a7c15)); !ok || l.token != k {
			t.Fatalf("key %q lost after growing: %+v, %v", k, l, ok)
		}
	}
}

// TestShardCount checks the shard counts New picks per GOMAXPROCS.
func TestShardCount(t *testing.T) {
	for _, c := range []struct{ procs, want int }{
		{1, 4}, {2, 8}, {3, 16}, {4, 16}, {16, 64}, {100, 64},
	} {
		if got := shardCount(c.procs); got != c.want {
			t.Errorf("shardCount(%d) = %d, want %d", c.procs, got, c.want)
		}
	}
}

// TestRingFull checks what a store does when a ring cannot take one more
// entry: a new lock of its class is refused with ErrFull, and an extension
// into it changes the lock in place, which keeps its new expiry.
func TestRingFull(t *testing.T) {
	defer func(n int) { maxRing = n }(maxRing)
	maxRing = minRing
	clk := newFakeClock()
	// One shard, room for more locks than a ring takes; one policy may fill it.
	s := New(WithClock(clk.Now), WithMaxKeys(16), WithPolicyShare(1))
	for i := range minRing {
		acquire(t, s, "k"+strconv.Itoa(i), "t", time.Second)
	}
	_, err := s.Acquire(bg, store.Request{Key: "one-more", Token: "t", TTL: time.Second})
	if !errors.Is(err, ErrFull) {
		t.Fatalf("a new lock for a full ring: %v, want ErrFull", err)
	}
	acquire(t, s, "other-class", "t", time.Hour) // another ring has room
	acquire(t, s, "short", "t", time.Millisecond)
	outcome(t, store.OK)(s.Extend(bg, "short", "t", 1050*time.Millisecond)) // into the full ring (1s and 1.05s are one class): in place
	clk.Advance(time.Second)
	if g := acquire(t, s, "short", "u", time.Second); g.Acquired || g.Remaining != 50*time.Millisecond {
		t.Fatalf("an extension into a full ring: %+v, want held 50ms more", g)
	}
	if g := acquire(t, s, "k0", "u", time.Second); !g.Acquired {
		t.Fatalf("an expired lock of a full ring: %+v, want acquired", g)
	}
}

// TestRingModel pushes to and pops from a ring at random, in phases that
// grow it from one small block to many and shrink it again, and checks
// after every step that each entry is found by its sequence number, as in
// a plain slice: through the doubling of the one block, its unwrapping
// into blocks, the doubling of the list of blocks and the reuse of blocks
// the head has passed.
func TestRingModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var g ring
	var model []string // the keys of the entries from head to tail
	most := 0
	for step := range 40_000 {
		grow := step/5000%2 == 0 // phases of growth and of shrinking
		if p := rng.IntN(10); (grow && p < 6) || (!grow && p < 4) {
			key := "e" + strconv.Itoa(step)
			seq, ok := g.push(entry{key: key})
			if !ok || seq != g.tail-1 {
				t.Fatalf("step %d: push = %d, %v; want %d", step, seq, ok, g.tail-1)
			}
			model = append(model, key)
		} else if len(model) > 0 {
			*g.at(g.head) = entry{}
			g.head++
			model = model[1:]
		}
		most = max(most, len(model))
		if int(g.tail-g.head) != len(model) {
			t.Fatalf("step %d: ring holds %d, model %d", step, g.tail-g.head, len(model))
		}
		for i, key := range model {
			if got := g.at(g.head + uint32(i)).key; got != key {
				t.Fatalf("step %d: entry %d is %q, want %q", step, i, got, key)
			}
		}
	}
	if places := len(g.blocks) * int(g.emask+1); most < 4*blockLen || places > 4*most {
		t.Fatalf("at most %d entries in %d places: want a ring of many blocks, at most four times as long as it had to be", most, places)
	}
}
