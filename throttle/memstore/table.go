package memstore

import (
	"math"
	"math/bits"
	"time"
)

// table is a shard's locks, in two parts: the locks themselves, appended in
// the order their expiries were set to a ring per TTL class (see ring.go),
// and an index from keys to them, an open-addressing hash table of 8-byte
// slots (a key's 32-bit tag and the ref of its lock in the rings).
//
// The layout follows what an acquisition of a new key does: it looks the
// key up and inserts it, and removes the lock that expired longest ago to
// keep the table from growing. In a map[string]lock, or a table of whole
// locks, each of these touches a line at a random place of a large table
// (tens of bytes per key) and usually misses the cache. Here the random
// places are in the index, eight times as dense, and the locks are read
// and written in order: a new lock is appended at a ring's tail, and the
// lock that expired longest ago is at a ring's head. A miss compares tags
// only, never a key's bytes. The index holds no pointers, so that the
// garbage collector does not scan it.
//
// Deleting a slot moves the following slots of its run back (backward-shift
// deletion) instead of leaving a tombstone, so that probes never lengthen
// with churn. The index doubles when three quarters full and, like the
// rings, never shrinks, as Go maps do not; the shard's capacity bounds the
// number of live locks.
type table struct {
	index []uint64  // tag<<32 | ref; 0 when empty (a tag is never 0)
	shift uint      // 32 - log2(len(index)): a tag's home slot is tag >> shift
	n     int       // live locks: occupied slots
	rings []ring    // one per TTL class in use, in order of first use
	pols  perPolicy // live locks per policy (lock.pol)
}

// minSlots is the size of a new index.
const minSlots = 8

// tagOf returns the tag of a key whose 64-bit hash is h: its high half with
// the lowest bit set, so that no slot is 0. (The shard was picked by the
// hash's lowest bits.)
func tagOf(h uint64) uint32 { return uint32(h>>32) | 1 }

func slotOf(tag uint32, r ref) uint64 { return uint64(tag)<<32 | uint64(r) }

func (t *table) home(tag uint32) int { return int(tag >> t.shift) }

// entry returns the lock entry r refers to.
func (t *table) entry(r ref) *entry {
	return t.rings[r.ring()].at(r.seq())
}

// at returns the entry of index slot i, which must be occupied.
func (t *table) at(i int) *entry { return t.entry(ref(t.index[i])) }

// lookup returns the index slot of key, and false when key has no lock.
func (t *table) lookup(key string, tag uint32) (int, bool) {
	if t.n == 0 {
		return 0, false
	}
	mask := len(t.index) - 1
	for i := t.home(tag); ; i = (i + 1) & mask {
		s := t.index[i]
		switch {
		case s == 0:
			return i, false
		case uint32(s>>32) == tag && t.entry(ref(s)).key == key:
			return i, true
		}
	}
}

// slotOfRef returns the index slot that refers to r, a live entry of tag,
// and false if there is none (there always is).
func (t *table) slotOfRef(tag uint32, r ref) (int, bool) {
	want := slotOf(tag, r)
	mask := len(t.index) - 1
	for i := t.home(tag); ; i = (i + 1) & mask {
		switch t.index[i] {
		case want:
			return i, true
		case 0:
			return 0, false
		}
	}
}

// get returns key's lock.
func (t *table) get(key string, tag uint32) (lock, bool) {
	if i, ok := t.lookup(key, tag); ok {
		return t.at(i).l, true
	}
	return lock{}, false
}

// insert adds l as the lock of key, which has none, at the tail of the ring
// of ttl's class. It reports false, adding nothing, when that ring is full
// (maxRing entries).
func (t *table) insert(key string, tag uint32, l lock, ttl time.Duration) bool {
	r, ok := t.push(entry{key: key, tag: tag, l: l}, ttl)
	if !ok {
		return false
	}
	if 4*(t.n+1) > 3*len(t.index) {
		t.grow()
	}
	mask := len(t.index) - 1
	i := t.home(tag)
	for t.index[i] != 0 {
		i = (i + 1) & mask
	}
	t.index[i] = slotOf(tag, r)
	t.n++
	t.pols.add(l.pol, 1)
	return true
}

// push appends e to the ring of ttl's class and returns its ref.
func (t *table) push(e entry, ttl time.Duration) (ref, bool) {
	c := ttlClass(ttl)
	k := 0
	for k < len(t.rings) && t.rings[k].class != c {
		k++
	}
	if k == len(t.rings) {
		t.rings = append(t.rings, ring{class: c})
	}
	seq, ok := t.rings[k].push(e)
	return refOf(k, seq), ok
}

// move gives the lock of index slot i the lock l, whose expiry is new, ttl
// from now: it appends l to the ring of ttl's class, so that the rings stay
// in about the order of expiry, and drops the old entry. When that ring is
// full it changes the entry in place, which only delays its reclaiming
// (every read checks the expiry).
func (t *table) move(i int, l lock, ttl time.Duration) {
	old := ref(t.index[i])
	e := t.entry(old)
	key, tag := e.key, e.tag
	r, ok := t.push(entry{key: key, tag: tag, l: l}, ttl)
	if !ok {
		t.entry(old).l = l // push may have moved the ring: look again
		return
	}
	t.index[i] = slotOf(tag, r)
	t.drop(old)
}

// remove drops the lock of index slot i and empties the slot.
func (t *table) remove(i int) {
	r := ref(t.index[i])
	t.pols.add(t.entry(r).l.pol, -1)
	t.drop(r)
	t.unlink(i)
}

// drop clears the entry r refers to, so that it no longer keeps its key and
// token alive, and gives back the cleared entries at its ring's tail (an
// acquisition released at once then leaves nothing behind).
func (t *table) drop(r ref) {
	g := &t.rings[r.ring()]
	*g.at(r.seq()) = entry{}
	g.trimTail()
}

// unlink empties index slot i, moving back the slots after it in its run
// whose home is not between i and them, so that every key stays reachable
// from its home without tombstones.
func (t *table) unlink(i int) {
	mask := len(t.index) - 1
	for j := (i + 1) & mask; t.index[j] != 0; j = (j + 1) & mask {
		home := t.home(uint32(t.index[j] >> 32))
		// The slot at j may fill the hole at i when i lies on its
		// probe path: no further from its home than j is.
		if (j-home)&mask >= (j-i)&mask {
			t.index[i] = t.index[j]
			i = j
		}
	}
	t.index[i] = 0
	t.n--
}

// grow doubles the index (or makes its first slots) and re-inserts every
// slot by its tag; no key is hashed or read again.
func (t *table) grow() {
	old := t.index
	size := max(2*len(old), minSlots)
	t.index = make([]uint64, size)
	t.shift = uint(32 - bits.TrailingZeros(uint(size)))
	mask := size - 1
	for _, s := range old {
		if s == 0 {
			continue
		}
		i := t.home(uint32(s >> 32))
		for t.index[i] != 0 {
			i = (i + 1) & mask
		}
		t.index[i] = s
	}
}

// sweep removes every lock expired at now and returns the earliest expiry
// of the ones left (math.MaxInt64 when none).
func (t *table) sweep(now time.Duration) time.Duration {
	low := time.Duration(math.MaxInt64)
	for k := range t.rings {
		g := &t.rings[k]
		for seq := g.head; seq != g.tail; seq++ {
			e := g.at(seq)
			switch {
			case e.key == "":
			case e.l.expires <= now:
				if i, ok := t.slotOfRef(e.tag, refOf(k, seq)); ok {
					t.unlink(i)
					t.pols.add(e.l.pol, -1)
				}
				*e = entry{}
			default:
				low = min(low, e.l.expires)
			}
		}
		g.trimHead()
		g.trimTail()
	}
	return low
}
