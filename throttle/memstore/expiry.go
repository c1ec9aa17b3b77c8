package memstore

import (
	"math/bits"
	"time"
)

// Expiry queues: how a shard finds its expired locks without looking for
// them. Every lock expiry the shard sets is also appended to a queue, and
// every new expiry first removes the expired locks at the queues' fronts.
// A queue holds the expiries of one TTL class (TTLs within a factor of two:
// see ttlClass), set in time order, so they expire nearly in the order they
// were queued: its front is the next to expire, and an expired front is a
// lock to remove. Redis-like random sampling did the same job at the cost
// of a map iteration (and a cache miss at a random place in the map) per
// insertion; a queue is read in order. A queued expiry is only a hint: the
// lock may have been released, extended or taken again since, so it is
// removed only when the map says it expired (see shard.live).
//
// Within a class an expiry can be queued behind one up to twice as far
// off, so a lock may outstay its expiry by up to its TTL before the queue
// reaches it; it is never read as held meanwhile (shard.live checks every
// lock it returns), and a full shard still sweeps all its locks.
//
// A released lock's expiry stays queued until it comes due (the queue
// keeps its place), but without its key, so that the key's bytes are not
// kept alive for the rest of the TTL: the lock knows where its expiry is
// queued (lock.queued), and Release clears the entry's key, and drops it
// when no entry with a key follows it, as none does when nothing else was
// queued meanwhile.

// reclaimPerPush is how many expired locks a new expiry removes, at most,
// from the front of each queue: more than one, so that the queues shrink
// after a burst instead of only keeping pace with new keys.
const reclaimPerPush = 2

// queued is one lock expiry in an expiry queue; key is "" once the lock
// was released.
type queued struct {
	key     string
	tag     uint64        // the key's (see Store.locate), to find it without hashing it
	expires time.Duration // since Store.epoch
}

// expiryQueue is the FIFO of one TTL class: items[head:] are queued.
// items[i] has the sequence number base+i (modulo seqMask+1), by which a
// lock finds its entry again.
type expiryQueue struct {
	class int
	head  int
	base  uint32
	items []queued
}

// queuePos is where a lock's expiry is queued: the queue's class in the
// top 6 bits (ttlClass is below 64, a TTL being a positive int64), the
// entry's sequence number in the other 26. The numbers wrap; an entry found by a stale number is checked
// by its key.
type queuePos uint32

const (
	seqBits = 26
	seqMask = 1<<seqBits - 1
)

func (p queuePos) class() int  { return int(p >> seqBits) }
func (p queuePos) seq() uint32 { return uint32(p) & seqMask }

// ttlClass returns the class of the expiry queue for a TTL: its length in
// bits, so that TTLs in one class differ by less than a factor of two.
func ttlClass(ttl time.Duration) int { return bits.Len64(uint64(max(ttl, 0))) }

// enqueue queues key's new expiry, ttl from now, and returns where. Call
// reclaim first.
func (sh *shard) enqueue(key string, tag uint64, expires, ttl time.Duration) queuePos {
	c := ttlClass(ttl)
	q := sh.queue(c)
	if q == nil {
		sh.queues = append(sh.queues, expiryQueue{class: c})
		q = &sh.queues[len(sh.queues)-1]
	}
	pos := queuePos(c)<<seqBits | queuePos((q.base+uint32(len(q.items)))&seqMask)
	q.items = append(q.items, queued{key, tag, expires})
	return pos
}

// queue returns the expiry queue of class c, or nil.
func (sh *shard) queue(c int) *expiryQueue {
	for i := range sh.queues {
		if sh.queues[i].class == c {
			return &sh.queues[i]
		}
	}
	return nil
}

// unqueue forgets the expiry of key, a lock just released, queued at pos:
// it clears the entry's key, which the queue then no longer keeps alive,
// and drops the entries without a key at the queue's end.
func (sh *shard) unqueue(key string, pos queuePos) {
	q := sh.queue(pos.class())
	if q == nil {
		return
	}
	i := int((pos.seq() - q.base) & seqMask)
	if i < q.head || i >= len(q.items) || q.items[i].key != key {
		return // already reclaimed, or a later entry took its number
	}
	q.items[i] = queued{expires: q.items[i].expires}
	n := len(q.items)
	for n > q.head && q.items[n-1].key == "" {
		n--
	}
	if n < len(q.items) {
		q.items = q.items[:n]
		q.compact()
	}
}

// reclaim removes up to reclaimPerPush expired locks from the front of each
// expiry queue.
func (sh *shard) reclaim(now time.Duration) {
	for i := range sh.queues {
		q := &sh.queues[i]
		for n := 0; n < reclaimPerPush && q.head < len(q.items); n++ {
			e := q.items[q.head]
			if e.expires > now {
				break
			}
			q.items[q.head] = queued{} // no longer keeps the key's bytes alive
			q.head++
			if e.key != "" { // "": released
				sh.live(e.key, e.tag, now) // removes the lock if it really expired
			}
		}
		q.compact()
	}
}

// compact gives the queue's free front back: all of it when the queue is
// empty, and otherwise, once it is at least half the slice, by moving the
// queued items down, so that the slice is at most twice as long as the
// queue (amortised: each item moves once per halving).
func (q *expiryQueue) compact() {
	switch {
	case q.head == len(q.items):
		q.base += uint32(q.head)
		q.items, q.head = q.items[:0], 0
	case q.head >= 32 && 2*q.head >= len(q.items):
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.base += uint32(q.head)
		q.items, q.head = q.items[:n], 0
	}
}
