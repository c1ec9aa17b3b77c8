package memstore

import (
	"math"
	"math/bits"
	"time"
)

// locks is a shard's locks, laid out for speed and memory as every request
// touches them. A lock goes to the ring of its TTL class (TTLs within a
// factor of two), so expired locks are taken from the heads, not searched
// for; an open-addressing index of pointer-free slots finds it.
type locks struct {
	bounds
	index  []uint64 // tag<<32 | ref; 0 when empty (a tag is never 0)
	shift  uint     // 32 - log2(len(index)): a tag's home slot is tag >> shift
	rings  []ring   // one per TTL class in use
	onDrop func(key string, l lock)
}

// entry is one lock in a ring; key is "" once it was cleared.
type entry struct {
	key string
	l   lock
	tag uint32
}

// ring is the FIFO of one TTL class: seq's entry is at seq % capacity, in
// equal blocks. A small ring is one block that doubles by copying; a larger
// one adds blocks, so that its entries are never copied again.
type ring struct {
	class      int
	head, tail uint32
	blocks     [][]entry // a power of two of them, each 1<<blockBits entries
	blockBits  uint
}

// ref is where an entry is: its ring in the top 6 bits (fewer than 64 TTL
// classes), its sequence number modulo 2^seqBits below.
type ref uint32

const (
	seqBits        = 26
	minRing        = 8
	maxBlockBits   = 10
	reclaimPerPush = 2 // more than one, so that rings shrink after a burst
)

func refOf(ring int, seq uint32) ref  { return ref(ring)<<seqBits | ref(seq&(1<<seqBits-1)) }
func (r ref) ring() int               { return int(r >> seqBits) }
func (r ref) seq() uint32             { return uint32(r) & (1<<seqBits - 1) }
func slotOf(tag uint32, r ref) uint64 { return uint64(tag)<<32 | uint64(r) }

// tagOf returns the tag of a key of hash h: its high half, never 0.
func tagOf(h uint64) uint32 { return uint32(h>>32) | 1 }

func (g *ring) at(seq uint32) *entry {
	b := g.blocks[(seq>>g.blockBits)&uint32(len(g.blocks)-1)]
	return &b[seq&(1<<g.blockBits-1)]
}

func (g *ring) capacity() int { return len(g.blocks) << g.blockBits }

// push appends e and returns its sequence number, or false when the ring
// holds as many entries as a ref can tell apart.
func (g *ring) push(e entry) (uint32, bool) {
	switch c := g.capacity(); {
	case int(g.tail-g.head) < c:
	case c >= 1<<seqBits:
		return 0, false
	case g.blockBits < maxBlockBits || c == 0:
		g.growBlock()
	default:
		g.addBlocks()
	}
	*g.at(g.tail) = e
	g.tail++
	return g.tail - 1, true
}

func (g *ring) growBlock() {
	size := uint(bits.TrailingZeros(minRing))
	if len(g.blocks) > 0 {
		size = g.blockBits + 1
	}
	b := make([]entry, 1<<size)
	for s := g.head; s != g.tail; s++ {
		b[s&(1<<size-1)] = *g.at(s)
	}
	g.blocks, g.blockBits = [][]entry{b}, size
}

// addBlocks doubles a full ring of whole blocks, each moved to its slot in
// the larger ring; when head and tail share a block, the tail's part is
// copied to a block of its own.
func (g *ring) addBlocks() {
	n := uint32(len(g.blocks))
	blocks := make([][]entry, 2*n)
	first, last := g.head>>g.blockBits, (g.tail-1)>>g.blockBits
	for k := first; ; k++ {
		old := g.blocks[k&(n-1)]
		if k != first && k&(n-1) == first&(n-1) { // the tail's part of the head's block
			b := make([]entry, len(old))
			copy(b, old[:g.tail&(1<<g.blockBits-1)])
			clear(old[:g.tail&(1<<g.blockBits-1)])
			old = b
		}
		blocks[k&(2*n-1)] = old
		if k == last {
			break
		}
	}
	for i := range blocks {
		if blocks[i] == nil {
			blocks[i] = make([]entry, 1<<g.blockBits)
		}
	}
	g.blocks = blocks
}

func (t *locks) entry(r ref) *entry  { return t.rings[r.ring()].at(r.seq()) }
func (t *locks) at(i int) *entry     { return t.entry(ref(t.index[i])) }
func (t *locks) home(tag uint32) int { return int(tag >> t.shift) }

// get returns key's lock and index slot (good until a lock is added or
// removed) when it has not expired at now, removing it when it has.
func (t *locks) get(key string, tag uint32, now time.Duration) (lock, int, bool) {
	for i := t.home(tag); t.index[i] != 0; i = (i + 1) & (len(t.index) - 1) {
		if s := t.index[i]; uint32(s>>32) == tag && t.entry(ref(s)).key == key {
			if l := t.entry(ref(s)).l; l.expires > now {
				return l, i, true
			}
			t.remove(i, true)
			break
		}
	}
	return lock{}, 0, false
}

// add stores l, ttl from now, as the lock of key, which has none, or reports
// false when the ring of ttl's class is full.
func (t *locks) add(key string, tag uint32, l lock, ttl time.Duration) bool {
	r, ok := t.push(entry{key: key, tag: tag, l: l}, ttl)
	if !ok {
		return false
	}
	if 4*(t.used+1) > 3*int64(len(t.index)) {
		t.grow()
	}
	t.index[t.find(tag, 0)] = slotOf(tag, r)
	t.count(l.pol, 1)
	t.floor = min(t.floor, l.expires)
	return true
}

func (t *locks) push(e entry, ttl time.Duration) (ref, bool) {
	c := bits.Len64(uint64(ttl))
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

// find returns the first index slot from tag's home that holds s: 0 for a
// free one, or the live slot of tag's entry.
func (t *locks) find(tag uint32, s uint64) int {
	i := t.home(tag)
	for t.index[i] != s {
		i = (i + 1) & (len(t.index) - 1)
	}
	return i
}

func (t *locks) grow() {
	old := t.index
	size := max(2*len(old), minRing)
	t.index = make([]uint64, size)
	t.shift = uint(32 - bits.TrailingZeros(uint(size)))
	for _, s := range old {
		if s != 0 {
			t.index[t.find(uint32(s>>32), 0)] = s
		}
	}
}

// update gives the lock of slot i the value l. A new expiry moves it to the
// tail of its TTL class's ring, after a reclaim, to keep the rings in order.
func (t *locks) update(i int, l lock, now time.Duration) {
	e := t.at(i)
	if e.l.expires == l.expires {
		e.l = l
		return
	}
	key, tag, old := e.key, e.tag, ref(t.index[i])
	t.reclaim(now) // removes expired locks only: key's stays, maybe in another slot
	i = t.find(tag, slotOf(tag, old))
	r, ok := t.push(entry{key: key, tag: tag, l: l}, l.expires-now)
	if !ok {
		t.entry(old).l = l // push may have grown the ring: look again
		return
	}
	t.index[i] = slotOf(tag, r)
	*t.entry(old) = entry{}
	t.rings[old.ring()].trim()
	t.floor = min(t.floor, l.expires)
}

// remove drops the lock of slot i and clears its entry, keeping no string.
func (t *locks) remove(i int, expired bool) {
	r := ref(t.index[i])
	e := *t.entry(r)
	*t.entry(r) = entry{}
	t.count(e.l.pol, -1)
	t.unlink(i)
	if expired && t.onDrop != nil {
		t.onDrop(e.key, e.l)
	}
}

func (t *locks) release(i int) {
	r := ref(t.index[i])
	t.remove(i, false)
	t.rings[r.ring()].trim()
}

func (g *ring) trim() {
	for g.head != g.tail && g.at(g.head).key == "" {
		g.head++
	}
	for g.tail != g.head && g.at(g.tail-1).key == "" {
		g.tail--
	}
}

// unlink empties slot i and moves back the later slots of its run whose home
// is not between i and them: no tombstones.
func (t *locks) unlink(i int) {
	mask := len(t.index) - 1
	for j := (i + 1) & mask; t.index[j] != 0; j = (j + 1) & mask {
		if home := t.home(uint32(t.index[j] >> 32)); (j-home)&mask >= (j-i)&mask {
			t.index[i] = t.index[j]
			i = j
		}
	}
	t.index[i] = 0
}

// reclaim lets up to reclaimPerPush entries leave the head of each ring:
// cleared ones, and expired locks, which it removes.
func (t *locks) reclaim(now time.Duration) {
	for k := range t.rings {
		g := &t.rings[k]
		for n := 0; n < reclaimPerPush && g.head != g.tail; n++ {
			if e := g.at(g.head); e.key != "" {
				if e.l.expires > now {
					break
				}
				t.remove(t.find(e.tag, slotOf(e.tag, refOf(k, g.head))), true)
			}
			g.head++
		}
	}
}

// room reports whether a new lock of policy p fits, after a reclaim and,
// if need be and some may have expired, a sweep of all locks.
func (t *locks) room(p uint16, now time.Duration) bool {
	t.reclaim(now)
	if t.fits(p, 1) || now < t.floor {
		return t.fits(p, 1)
	}
	t.floor = math.MaxInt64
	for k := range t.rings {
		g := &t.rings[k]
		for seq := g.head; seq != g.tail; seq++ {
			switch e := g.at(seq); {
			case e.key == "":
			case e.l.expires <= now:
				t.remove(t.find(e.tag, slotOf(e.tag, refOf(k, seq))), true)
			default:
				t.floor = min(t.floor, e.l.expires)
			}
		}
		g.trim()
	}
	return t.fits(p, 1)
}
