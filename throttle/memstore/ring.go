package memstore

import (
	"math/bits"
	"time"
)

// Rings: where a shard keeps its locks, and how it finds the expired ones
// without looking for them. Every lock whose expiry is set (a new lock, an
// extension, a re-entry that raised it) is appended to the ring of its TTL
// class (TTLs within a factor of two: see ttlClass), so a ring holds its
// locks in the order their expiries were set, which is nearly the order
// they expire in: its head is the next to expire. Before a shard sets an
// expiry it removes the expired locks at the rings' heads (reclaim), so a
// steady stream of one-off keys costs one removal per insertion, at a place
// just read, instead of a search. Redis-like random sampling did the same
// job at the cost of a map iteration and a cache miss per insertion.
//
// Within a class a lock can be appended behind one up to twice as far off,
// so a lock may outstay its expiry by up to its TTL before reclaim reaches
// it; it is never read as held meanwhile (shard.live checks every lock it
// returns), and a full shard still sweeps all its locks.
//
// A lock released, or moved by a new expiry, leaves a cleared entry in its
// ring (its key and token no longer kept alive) until the entry reaches the
// head; the cleared entries at a ring's tail are given back at once, so
// that an acquisition released at once leaves nothing behind.

// reclaimPerPush is how many entries, at most, leave the head of each ring
// before an expiry is set: more than one, so that the rings shrink after a
// burst instead of only keeping pace with new keys.
const reclaimPerPush = 2

// entry is one lock in a ring; key is "" once the entry was cleared.
type entry struct {
	key string
	l   lock
	tag uint32 // the key's (see tagOf), to find its index slot without hashing it
}

// ring is the FIFO of one TTL class. Entries have wrapping sequence numbers;
// head and tail are the first one's and the next one's. A small ring is one
// block, a power of two long, in which the entry of sequence number s is at
// s % len. A ring longer than blockLen is blocks of blockLen entries, the
// entry of s in block s / blockLen (modulo the number of blocks, a power of
// two), so that a ring grows by a block, or by doubling its list of
// blocks, and never copies its entries: a shard of a quarter of a million
// locks would otherwise copy 16 MiB, holding its mutex, when it grows.
// Blocks that the head has passed are used again as the tail comes round.
type ring struct {
	class      int
	head, tail uint32
	blocks     [][]entry
	// at(s) is blocks[s>>shift&bmask][s&emask]: with one block, shift is
	// 32 (s>>32 is 0) and emask its length less one.
	shift        uint
	bmask, emask uint32
	// ready is the first sequence number from the tail on whose place
	// fits must be asked again: the entries up to it are known to fit.
	ready uint32
}

// blockLen is the length of a ring's blocks once it has more than one:
// 8 KiB of entries.
const (
	blockBits = 7
	blockLen  = 1 << blockBits
)

// ref is where an entry is: the index of its ring in table.rings in the top
// 6 bits (a shard has fewer than 64 classes, ttlClass being below 64), and
// its sequence number in the other 26, enough since a ring holds at most
// maxRing entries.
type ref uint32

const (
	seqBits = 26
	seqMask = 1<<seqBits - 1
	minRing = 8
)

// maxRing is the most entries a ring holds: what a ref can tell apart. (A
// variable, so that a test can lower it.) A full ring refuses new locks
// (ErrFull), which is reached only past 2^26 live locks of one TTL class
// in one shard, far more than a store's default bound.
var maxRing = 1 << seqBits

func refOf(ring int, seq uint32) ref { return ref(ring)<<seqBits | ref(seq&seqMask) }
func (r ref) ring() int              { return int(r >> seqBits) }
func (r ref) seq() uint32            { return uint32(r) & seqMask }

// ttlClass returns the class of the ring for a TTL: its length in bits, so
// that TTLs in one class differ by less than a factor of two.
func ttlClass(ttl time.Duration) int { return bits.Len64(uint64(max(ttl, 0))) }

// at returns the entry of sequence number seq (or of any number equal to it
// modulo 2^26).
func (g *ring) at(seq uint32) *entry {
	return &g.blocks[seq>>g.shift&g.bmask][seq&g.emask]
}

// push appends e and returns its sequence number, or false when the ring
// would hold more than maxRing entries.
func (g *ring) push(e entry) (uint32, bool) {
	if g.tail == g.ready {
		for !g.fits() {
			if !g.grow() {
				return 0, false
			}
		}
		g.ready = g.readyUntil()
	}
	seq := g.tail
	*g.at(seq) = e
	g.tail++
	return seq, true
}

// fits reports whether the tail's place is ready for an entry: in a ring
// of one block, whether the block has a free place; in a ring of blocks,
// whether the tail's block has a place in the list that no entry's block
// uses, and a block there.
func (g *ring) fits() bool {
	switch n := uint32(len(g.blocks)); n {
	case 0:
		return false
	case 1:
		return g.tail-g.head <= g.emask
	default:
		bt := g.tail >> blockBits
		return bt-g.head>>blockBits < n && g.blocks[bt&g.bmask] != nil
	}
}

// readyUntil returns ready for a ring whose tail fits: the end of the one
// block's free places (the head only moves on, so they stay free), or the
// end of the tail's block.
func (g *ring) readyUntil() uint32 {
	if len(g.blocks) == 1 {
		return g.head + g.emask + 1
	}
	return (g.tail>>blockBits + 1) << blockBits
}

// grow makes room for the tail's entry, keeping every entry's sequence
// number, so that the refs to it stay good: it makes the first block,
// doubles a small ring's one block, gives the tail's place a block (a
// new one, or a passed one, see fits), or doubles the list of blocks. It
// reports false when the ring would then hold more than maxRing entries.
func (g *ring) grow() bool {
	n := len(g.blocks)
	switch {
	case n == 0:
		if maxRing < minRing {
			return false
		}
		g.setBlocks([][]entry{make([]entry, minRing)})
		return true
	case n == 1 && len(g.blocks[0]) < blockLen:
		if 2*len(g.blocks[0]) > maxRing {
			return false
		}
		old := *g
		g.setBlocks([][]entry{make([]entry, 2*len(old.blocks[0]))})
		g.copyFrom(&old)
		return true
	case n > 1 && g.tail>>blockBits-g.head>>blockBits < uint32(n):
		g.blocks[g.tail>>blockBits&g.bmask] = make([]entry, blockLen)
		return true
	}
	if 2*n*blockLen > maxRing {
		return false
	}
	old := *g
	g.setBlocks(make([][]entry, 2*n))
	if n == 1 {
		// The one block wraps round: its entries may belong to two
		// blocks of the new list, so they move (blockLen at most).
		g.copyFrom(&old)
		return true
	}
	// The tail is at the start of its block (fits failed), so the
	// entries' blocks are the head's up to the one before the tail's.
	for b := g.head >> blockBits; b != g.tail>>blockBits; b++ {
		g.blocks[b&g.bmask] = old.blocks[b&old.bmask]
	}
	return true
}

// copyFrom copies the entries of old, the ring before its blocks changed,
// to their places in g, making the blocks they need.
func (g *ring) copyFrom(old *ring) {
	for seq := g.head; seq != g.tail; seq++ {
		if b := &g.blocks[seq>>g.shift&g.bmask]; *b == nil {
			*b = make([]entry, blockLen)
		}
		*g.at(seq) = *old.at(seq)
	}
}

// setBlocks makes blocks the ring's list: one block of any power-of-two
// length, or a power-of-two number of blocks of blockLen.
func (g *ring) setBlocks(blocks [][]entry) {
	g.blocks = blocks
	if len(blocks) == 1 {
		g.shift, g.bmask, g.emask = 32, 0, uint32(len(blocks[0])-1)
		return
	}
	g.shift, g.bmask, g.emask = blockBits, uint32(len(blocks)-1), blockLen-1
}

// trimHead gives back the cleared entries at the head.
func (g *ring) trimHead() {
	for g.head != g.tail && g.at(g.head).key == "" {
		g.head++
	}
}

// trimTail gives back the cleared entries at the tail.
func (g *ring) trimTail() {
	for g.tail != g.head && g.at(g.tail-1).key == "" {
		g.tail--
	}
}

// reclaim lets up to reclaimPerPush entries leave the head of each ring:
// cleared ones, and expired locks, which it removes.
func (sh *shard) reclaim(now time.Duration) {
	t := &sh.locks
	for k := range t.rings {
		g := &t.rings[k]
		for n := 0; n < reclaimPerPush && g.head != g.tail; n++ {
			e := g.at(g.head)
			if e.key != "" {
				if e.l.expires > now {
					break
				}
				if i, ok := t.slotOfRef(e.tag, refOf(k, g.head)); ok {
					t.unlink(i)
					t.pols.add(e.l.pol, -1)
				}
				sh.expireRecord(e.key, now)
				*e = entry{}
			}
			g.head++
		}
	}
}
