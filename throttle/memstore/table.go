package memstore

import (
	"math"
	"time"
)

// item is what a table holds: a lock, a fence counter, a quota or a record.
type item interface {
	expiry() time.Duration // since Store.epoch
	policy() uint16        // the key's policy (see policies)
	size() int64           // what it counts against the table's bounds
}

// sampleSize is how many entries a new entry looks at to remove the expired
// ones among them, as Redis's active expiry does: enough to keep up with a
// stream of one-off keys, few enough to cost little.
const sampleSize = 3

// table is a map of entries that expire, bounded in total and per policy,
// whose expired entries are removed lazily: when read, when sampled by a new
// entry, and all at once when a new entry does not fit.
type table[V item] struct {
	m        map[string]V
	used     int64
	byPolicy []int64
	limit    int64 // the most used
	polLimit int64 // the most one policy's entries use
	// floor is at most every entry's expiry: before it nothing expired, and
	// neither a sample nor a sweep can find anything.
	floor  time.Duration
	onDrop func(key string, v V) // nil, or what else a removal changes
}

func newTable[V item](limit int64, share float64) table[V] {
	pl := limit
	if share < 1 {
		pl = max(int64(float64(limit)*share), 1)
	}
	return table[V]{m: map[string]V{}, limit: limit, polLimit: pl, floor: math.MaxInt64}
}

// get returns key's entry when it has not expired at now, removing it when
// it has.
func (t *table[V]) get(key string, now time.Duration) (V, bool) {
	v, ok := t.m[key]
	if ok && v.expiry() <= now {
		t.drop(key, v)
		var zero V
		return zero, false
	}
	return v, ok
}

// set stores v as key's entry, in place of any other.
func (t *table[V]) set(key string, v V) {
	if old, ok := t.m[key]; ok {
		t.count(old, -1)
	}
	t.m[key] = v
	t.count(v, 1)
	t.floor = min(t.floor, v.expiry())
}

// drop removes key's entry v.
func (t *table[V]) drop(key string, v V) {
	delete(t.m, key)
	t.count(v, -1)
	if t.onDrop != nil {
		t.onDrop(key, v)
	}
}

func (t *table[V]) count(v V, sign int64) {
	p := int(v.policy())
	if p >= len(t.byPolicy) {
		t.byPolicy = append(t.byPolicy, make([]int64, p+1-len(t.byPolicy))...)
	}
	t.used += sign * v.size()
	t.byPolicy[p] += sign * v.size()
}

func (t *table[V]) policyUsed(p uint16) int64 {
	if int(p) < len(t.byPolicy) {
		return t.byPolicy[p]
	}
	return 0
}

// room reports whether n more of policy p fit, after removing the expired
// entries among a few and, when that is not enough, every expired entry.
func (t *table[V]) room(p uint16, n int64, now time.Duration) bool {
	fits := func() bool { return t.used+n <= t.limit && t.policyUsed(p)+n <= t.polLimit }
	if now < t.floor {
		return fits()
	}
	i := 0
	for k, v := range t.m {
		if i++; i > sampleSize {
			break
		}
		if v.expiry() <= now {
			t.drop(k, v)
		}
	}
	if fits() {
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
	return fits()
}
