package memstore

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestShardCount checks the shard counts New picks per GOMAXPROCS.
func TestShardCount(t *testing.T) {
	for procs, want := range map[int]int{1: 4, 2: 8, 3: 16, 4: 16, 16: 64, 100: 64} {
		assert.Equal(t, want, shardCount(procs), "shardCount(%d)", procs)
	}
}

// testItem is an entry of TestTableModel.
type testItem struct {
	expires time.Duration
	pol     uint16
}

func (e testItem) expiry() time.Duration { return e.expires }
func (e testItem) policy() uint16        { return e.pol }
func (e testItem) size() int64           { return 1 }

// TestTableModel drives a table and a plain map with the same random sets,
// drops, reads and requests for room, with entries of a few policies and
// expiries, and checks after every step that the table holds the model's
// live entries, counts them in all and per policy, and grants room exactly
// when the live entries leave it.
func TestTableModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	tb := newTable[testItem](12)
	model := map[string]testItem{}
	for step := range 20_000 {
		key := "k" + strconv.Itoa(rng.IntN(30))
		now := time.Duration(step / 10)
		switch op := rng.IntN(4); op {
		case 0, 1:
			l := testItem{expires: now + time.Duration(1+rng.IntN(40)), pol: uint16(rng.IntN(3))}
			if old, ok := tb.m[key]; ok && old.pol == l.pol {
				tb.put(key, l, false)
				model[key] = l
			} else if tb.room(l.pol, 1, now) {
				if old, ok := tb.m[key]; ok { // not removed by room
					tb.drop(key, old)
				}
				tb.put(key, l, true)
				model[key] = l
			} else {
				live := map[uint16]int64{}
				for k, m := range tb.m {
					require.Greater(t, m.expires, now, "step %d: expired %q kept by a refusal", step, k)
					live[m.pol]++
				}
				require.False(t, tb.wantFits(live, l.pol, 1), "step %d: room refused with %v live", step, live)
			}
		case 2:
			if l, ok := tb.m[key]; ok {
				tb.drop(key, l)
				delete(model, key)
			}
		default:
			l, ok := tb.get(key, now)
			want, wantOK := model[key]
			if wantOK && want.expires <= now {
				want, wantOK = testItem{}, false
				delete(model, key)
			}
			require.Equal(t, wantOK, ok, "step %d: get(%q)", step, key)
			require.Equal(t, want, l, "step %d: get(%q)", step, key)
		}
		for k, l := range model { // the table may drop expired entries at any time
			if _, ok := tb.m[k]; !ok {
				require.LessOrEqual(t, l.expires, now, "step %d: live %q dropped", step, k)
				delete(model, k)
			}
		}
		require.Equal(t, model, tb.m, "step %d", step)
		var used int64
		byPolicy := map[uint16]int64{}
		for _, l := range tb.m {
			used++
			byPolicy[l.pol]++
			require.GreaterOrEqual(t, l.expires, tb.floor, "step %d: an entry below the floor", step)
		}
		require.Equal(t, used, tb.used, "step %d", step)
		for p := range uint16(3) {
			require.Equal(t, byPolicy[p], tb.policyUsed(p), "step %d: policy %d", step, p)
		}
	}
}
