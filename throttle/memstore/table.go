package memstore

import (
	"math"
	"time"
)

// item is what a table holds: a fence counter, a quota or a record.
type item interface {
	expiry() time.Duration // since Store.epoch
	policy() uint16        // the key's policy (see policies)
	size() int64           // what it counts against the table's bounds
}

// Every sampleEvery-th new entry of a table looks at sampleEvery*sampleSize
// entries and removes the expired among them: enough to keep up with a
// stream of one-off keys, in one map iteration (whose start costs more than
// its steps) per batch rather than per entry (BenchmarkQuotaOneOff).
const (
	sampleSize  = 3
	sampleEvery = 8
)

// bounds counts what a shard's entries of one kind use, in all and per
// policy, against their limit. Each policy that has had an entry in the
// shard is owed a fair share, the limit divided by their number; a policy
// may grow past its share only into room no other is owed (see fits).
type bounds struct {
	used, limit int64
	byPolicy    []int64
	seen        []bool        // the policies that have had an entry
	fair        int64         // limit / policies seen
	owed        int64         // the sum over the policies seen of fair - use, where positive
	floor       time.Duration // at most every entry's expiry: before it, nothing expired
}

func newBounds(limit int64) bounds {
	return bounds{limit: limit, fair: limit, floor: math.MaxInt64}
}

func (b *bounds) count(p uint16, n int64) {
	b.see(p)
	b.owed -= b.owedTo(p)
	b.used += n
	b.byPolicy[p] += n
	b.owed += b.owedTo(p)
}

// see counts p among the policies seen, if it was not, which shrinks the
// fair share (O(policies), once per policy).
func (b *bounds) see(p uint16) {
	if int(p) >= len(b.byPolicy) {
		b.byPolicy = append(b.byPolicy, make([]int64, int(p)+1-len(b.byPolicy))...)
		b.seen = append(b.seen, make([]bool, int(p)+1-len(b.seen))...)
	}
	if b.seen[p] {
		return
	}
	b.seen[p] = true
	k := int64(0)
	for _, s := range b.seen {
		if s {
			k++
		}
	}
	b.fair, b.owed = b.limit/k, 0
	for q := range b.byPolicy {
		b.owed += b.owedTo(uint16(q))
	}
}

func (b *bounds) policyUsed(p uint16) int64 {
	if int(p) < len(b.byPolicy) {
		return b.byPolicy[p]
	}
	return 0
}

// owedTo is the room policy p is owed: what its entries lack of its fair
// share; 0 for a policy never seen or at its share.
func (b *bounds) owedTo(p uint16) int64 {
	if int(p) >= len(b.seen) || !b.seen[p] {
		return 0
	}
	return max(b.fair-b.byPolicy[p], 0)
}

// fits reports whether n more of policy p fit: within the limit, and
// leaving every other policy the room it is owed. A policy alone in the
// shard may fill it; of several, one under its share takes any free room.
// Asking counts p as seen: a newcomer is owed its share from now on.
func (b *bounds) fits(p uint16, n int64) bool {
	b.see(p)
	return b.used+n <= b.limit && b.used+n+b.owed-b.owedTo(p) <= b.limit
}

// table is a map of expiring entries, bounded in total and per policy; the
// expired are removed lazily: when read, when sampled by a new entry, and
// all at once when a new entry does not fit.
type table[V item] struct {
	bounds
	m      map[string]V
	onDrop func(key string, v V) // nil, or what else a removal changes
	news   uint8                 // new entries since the last sample, mod sampleEvery
}

func newTable[V item](limit int64) table[V] {
	return table[V]{bounds: newBounds(limit), m: map[string]V{}}
}

// get returns key's entry unless it expired at now, removing it then.
func (t *table[V]) get(key string, now time.Duration) (V, bool) {
	v, ok := t.m[key]
	if ok && v.expiry() <= now {
		t.drop(key, v)
		var zero V
		return zero, false
	}
	return v, ok
}

// put stores v as key's entry: new, or in place of one of the same policy
// and size.
func (t *table[V]) put(key string, v V, isNew bool) {
	if isNew {
		t.count(v.policy(), v.size())
	}
	t.m[key] = v
	t.floor = min(t.floor, v.expiry())
}

func (t *table[V]) drop(key string, v V) {
	delete(t.m, key)
	t.count(v.policy(), -v.size())
	if t.onDrop != nil {
		t.onDrop(key, v)
	}
}

// room reports whether n more of policy p fit, after removing the expired
// among a few entries and, if need be, all of them.
func (t *table[V]) room(p uint16, n int64, now time.Duration) bool {
	if now < t.floor {
		return t.fits(p, n)
	}
	t.sample(now)
	if t.fits(p, n) {
		return true
	}
	t.floor = math.MaxInt64
	for k, v := range t.m {
		if v.expiry() <= now {
			t.drop(k, v)
		} else {
			t.floor = min(t.floor, v.expiry())
		}
	}
	return t.fits(p, n)
}

// sample removes the expired among a few entries, every sampleEvery-th call.
func (t *table[V]) sample(now time.Duration) {
	if t.news = (t.news + 1) % sampleEvery; t.news != 0 || now < t.floor {
		return
	}
	i := 0
	for k, v := range t.m {
		if i++; i > sampleEvery*sampleSize {
			break
		}
		if v.expiry() <= now {
			t.drop(k, v)
		}
	}
}
