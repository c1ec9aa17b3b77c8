package memstore

import (
	"math"
	"math/bits"
	"time"
)

// table is a shard's lock table: an open-addressing hash table with linear
// probing, in place of a map[string]lock, because the locks are what every
// acquisition of a new key touches, and a map made it pay three times for
// one key: its hash computed once to pick the shard and again by the map,
// its bytes read again (a cache miss: they live in their own allocation)
// to compare them, and two probes, a look-up and an insertion.
//
// Here the hash is computed once, by the Store, and kept in the slot as
// its tag: a probe compares tags and reads a key's bytes only when the
// tags match, and the expiry queue, which keeps the tags too, removes an
// expired lock without hashing its key (and, as the queue holds the very
// string the slot does, compares the keys by pointer). A slot is 64 bytes,
// one cache line, lock included, so that a probe that finds its key, or an
// empty slot to insert into, usually reads one line.
//
// A deletion moves the following slots of its run back (backward-shift
// deletion) instead of leaving a tombstone, so that probes never lengthen
// with churn. The table doubles when three quarters full and never
// shrinks, as Go maps do not; the shard's capacity bounds it.
type table struct {
	slots []slot
	shift uint // 64 - log2(len(slots)): a tag's home slot is tag >> shift
	n     int  // occupied slots
}

// slot is one entry of a table; tag is 0 when the slot is empty.
type slot struct {
	tag uint64
	key string
	l   lock
}

// minSlots is the size of a new table.
const minSlots = 8

// tagOf returns the tag of a key whose hash is h: h with its lowest bit set,
// so that no tag is 0, the empty slot's. (The shard was picked by the
// hash's lowest bits, so within a shard they carry little anyway.)
func tagOf(h uint64) uint64 { return h | 1 }

// find returns the index of key's slot and true, or the index of the empty
// slot where it would go and false. The table must have a free slot.
func (t *table) find(key string, tag uint64) (int, bool) {
	mask := len(t.slots) - 1
	for i := int(tag >> t.shift); ; i = (i + 1) & mask {
		s := &t.slots[i]
		switch {
		case s.tag == 0:
			return i, false
		case s.tag == tag && s.key == key:
			return i, true
		}
	}
}

// lookup returns the index of key's slot, and false when key has none.
func (t *table) lookup(key string, tag uint64) (int, bool) {
	if t.n == 0 {
		return 0, false
	}
	return t.find(key, tag)
}

// get returns key's lock.
func (t *table) get(key string, tag uint64) (lock, bool) {
	if i, ok := t.lookup(key, tag); ok {
		return t.slots[i].l, true
	}
	return lock{}, false
}

// set stores l as key's lock, growing the table first when a new key would
// fill it past three quarters.
func (t *table) set(key string, tag uint64, l lock) {
	if 4*(t.n+1) > 3*len(t.slots) {
		t.grow()
	}
	i, ok := t.find(key, tag)
	if !ok {
		t.slots[i].tag, t.slots[i].key = tag, key
		t.n++
	}
	t.slots[i].l = l
}

// del removes key's lock, if any.
func (t *table) del(key string, tag uint64) {
	if t.n == 0 {
		return
	}
	if i, ok := t.find(key, tag); ok {
		t.remove(i)
	}
}

// remove empties slot i, moving back the slots after it in its run whose
// home is not between i and them, so that every key stays reachable from
// its home without tombstones.
func (t *table) remove(i int) {
	mask := len(t.slots) - 1
	for j := (i + 1) & mask; t.slots[j].tag != 0; j = (j + 1) & mask {
		home := int(t.slots[j].tag >> t.shift)
		// The entry at j may fill the hole at i when i lies on its
		// probe path: no further from its home than j is.
		if (j-home)&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = slot{}
	t.n--
}

// grow doubles the table (or makes its first slots) and re-inserts every
// entry by its tag; no key is hashed again.
func (t *table) grow() {
	old := t.slots
	size := max(2*len(old), minSlots)
	t.slots = make([]slot, size)
	t.shift = uint(64 - bits.TrailingZeros(uint(size)))
	mask := size - 1
	for k := range old {
		s := &old[k]
		if s.tag == 0 {
			continue
		}
		i := int(s.tag >> t.shift)
		for t.slots[i].tag != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = *s
	}
}

// sweep removes every lock expired at now and returns the earliest expiry
// of the ones left (math.MaxInt64 when none). An entry that a removal moves
// back into a slot already visited is visited again, which is harmless;
// none is skipped.
func (t *table) sweep(now time.Duration) time.Duration {
	low := time.Duration(math.MaxInt64)
	for i := 0; i < len(t.slots); {
		s := &t.slots[i]
		switch {
		case s.tag == 0:
			i++
		case s.l.expires <= now:
			t.remove(i) // slot i may now hold a later entry: look again
		default:
			low = min(low, s.l.expires)
			i++
		}
	}
	return low
}
