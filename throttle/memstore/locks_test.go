package memstore

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLocksModel drives a shard's locks and a map with the same random
// additions, updates (moving locks between rings), releases, reads and
// requests for room, and compares them after every step. Tags come from a few
// bits only, so that keys collide on their home slot and runs wrap round the
// end of the index: what the backward-shift deletion must get right.
func TestLocksModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ttls := []time.Duration{1, 3, 40, 100}
	for round := range 10 {
		lk := locks{bounds: newBounds(1 << 20)}
		lk.grow()
		model := map[string]lock{}
		tags := map[string]uint32{}
		var now time.Duration
		for step := range 3000 {
			k := "k" + strconv.Itoa(rng.IntN(8+round*60))
			if _, ok := tags[k]; !ok {
				tags[k] = tagOf(uint64(rng.IntN(4)) << 62) // few homes
				if rng.IntN(2) == 0 {
					tags[k] = tagOf(rng.Uint64())
				}
			}
			now += time.Duration(rng.IntN(2))
			ttl := ttls[rng.IntN(len(ttls))]
			l, i, held := lk.get(k, tags[k], now)
			if want, ok := model[k]; ok && want.expires > now {
				require.True(t, held, "round %d step %d: %q lost", round, step, k)
				require.Equal(t, want, l)
			} else {
				require.False(t, held, "round %d step %d: %q held", round, step, k)
				delete(model, k)
			}
			switch op := rng.IntN(10); {
			case op < 5 && held:
				l = lock{token: k + strconv.Itoa(step), expires: now + ttl, holds: l.holds + 1}
				lk.update(i, l, now)
				model[k] = l
			case op < 5:
				l = lock{token: k, expires: now + ttl}
				require.True(t, lk.room(0, now))
				require.True(t, lk.add(k, tags[k], l, ttl))
				model[k] = l
			case op < 8 && held:
				lk.release(i)
				delete(model, k)
			}
			checkLocks(t, &lk, model, now)
		}
	}
}

// checkLocks fails unless lk holds model's locks, apart from expired ones it
// may have removed, each found from its index slot, and nothing else.
func checkLocks(t *testing.T, lk *locks, model map[string]lock, now time.Duration) {
	t.Helper()
	all := lk.all()
	for k, l := range model {
		if _, ok := all[k]; !ok && l.expires <= now {
			delete(model, k)
		}
	}
	require.Equal(t, model, all)
	require.Equal(t, int64(len(all)), lk.used)
	occupied := 0
	for _, s := range lk.index {
		if s != 0 {
			occupied++
		}
	}
	require.Equal(t, lk.used, int64(occupied))
	for k := range lk.rings {
		g := &lk.rings[k]
		require.LessOrEqual(t, int(g.tail-g.head), g.capacity())
		for seq := g.head; seq != g.tail; seq++ {
			if e := g.at(seq); e.key != "" {
				require.True(t, slices.Contains(lk.index, slotOf(e.tag, refOf(k, seq))), "entry %q has no slot", e.key)
			}
		}
	}
}

// TestRingGrowsByBlocks checks a ring past one block: entries keep their
// sequence numbers and contents while it grows by whole blocks, also when
// the ring is full across a block boundary (head and tail in one slot), and
// with the head advanced by any amount.
func TestRingGrowsByBlocks(t *testing.T) {
	for _, popEvery := range []int{0, 3, 7, 1000} {
		var g ring
		head := 0
		for i := range 9000 {
			seq, ok := g.push(entry{key: strconv.Itoa(i)})
			require.True(t, ok)
			require.Equal(t, uint32(i), seq)
			if popEvery > 0 && i%popEvery == 0 {
				*g.at(g.head) = entry{}
				g.head++
				head++
			}
			if i%997 == 0 || i == 8999 {
				require.LessOrEqual(t, int(g.tail-g.head), g.capacity())
				for s := g.head; s != g.tail; s++ {
					require.Equal(t, strconv.Itoa(int(s)), g.at(s).key, "pop every %d, after %d pushes: seq %d", popEvery, i+1, s)
				}
			}
		}
		require.Equal(t, head, int(g.head))
	}
}
