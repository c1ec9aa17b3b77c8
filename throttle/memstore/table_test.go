package memstore

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// TestTableModel drives a table and a map with the same random sets,
// deletions and sweeps and compares them after every step. Tags come from
// a few bits only, so that keys collide on their home slot, runs are long
// and wrap round the end of the slots: what backward-shift deletion and
// the sweep must get right.
func TestTableModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 20 {
		var tbl table
		model := map[string]lock{}
		tags := map[string]uint64{}
		keys := 8 + round*10
		tagOfKey := func(k string) uint64 {
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
		for step := range 2000 {
			k := "k" + strconv.Itoa(rng.IntN(keys))
			tg := tagOfKey(k)
			switch op := rng.IntN(10); {
			case op < 5:
				l := lock{token: k, expires: time.Duration(rng.IntN(100))}
				tbl.set(k, tg, l)
				model[k] = l
			case op < 9:
				tbl.del(k, tg)
				delete(model, k)
			default:
				now := time.Duration(rng.IntN(100))
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
			}
			checkTable(t, &tbl, model, tags)
		}
	}
}

// checkTable fails unless tbl holds exactly model's locks, each found from
// its tag.
func checkTable(t *testing.T, tbl *table, model map[string]lock, tags map[string]uint64) {
	t.Helper()
	if tbl.n != len(model) {
		t.Fatalf("table holds %d entries, model %d", tbl.n, len(model))
	}
	occupied := 0
	for i := range tbl.slots {
		if tbl.slots[i].tag != 0 {
			occupied++
		}
	}
	if occupied != tbl.n {
		t.Fatalf("%d occupied slots, n = %d", occupied, tbl.n)
	}
	for k, tg := range tags {
		l, ok := tbl.get(k, tg)
		want, wantOK := model[k]
		if ok != wantOK || l != want {
			t.Fatalf("get(%q) = %+v, %v; want %+v, %v", k, l, ok, want, wantOK)
		}
	}
}

// TestTableGrows checks that a table keeps a free quarter as it grows and
// finds every key afterwards.
func TestTableGrows(t *testing.T) {
	var tbl table
	const n = 10_000
	for i := range n {
		k := strconv.Itoa(i)
		tbl.set(k, tagOf(uint64(i)*0x9e3779b97f4a7c15), lock{token: k})
		if 4*tbl.n > 3*len(tbl.slots) {
			t.Fatalf("%d entries in %d slots: more than three quarters full", tbl.n, len(tbl.slots))
		}
	}
	for i := range n {
		k := strconv.Itoa(i)
		if l, ok := tbl.get(k, tagOf(uint64(i)*0x9e3779b97f4a7c15)); !ok || l.token != k {
			t.Fatalf("key %q lost after growing: %+v, %v", k, l, ok)
		}
	}
}
