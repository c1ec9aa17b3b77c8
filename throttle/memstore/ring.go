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
// head and tail are the first one's and the next one's, and the entry of
// sequence number s is entries[s % len(entries)], len being a power of two.
type ring struct {
	class      int
	head, tail uint32
	entries    []entry
}

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
	return &g.entries[seq&uint32(len(g.entries)-1)]
}

// push appends e and returns its sequence number, or false when the ring
// holds maxRing entries.
func (g *ring) push(e entry) (uint32, bool) {
	if int(g.tail-g.head) == len(g.entries) {
		if len(g.entries) == maxRing {
			return 0, false
		}
		g.grow()
	}
	seq := g.tail
	*g.at(seq) = e
	g.tail++
	return seq, true
}

// grow doubles the ring; every entry keeps its sequence number, so the refs
// to it stay good.
func (g *ring) grow() {
	old := *g
	g.entries = make([]entry, max(2*len(old.entries), minRing))
	for seq := g.head; seq != g.tail; seq++ {
		*g.at(seq) = *old.at(seq)
	}
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
				}
				sh.expireRecord(e.key, now)
				*e = entry{}
			}
			g.head++
		}
	}
}
