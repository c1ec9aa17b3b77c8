package memstore

import (
	"hash/maphash"
	"math"
	"sync"
	"time"
)

// lock is one held key. Its token is the caller's, kept without copying.
type lock struct {
	token   string
	expires time.Duration // since Store.epoch
	fence   int64         // fence of the first acquisition, 0 if none was asked
	holds   int32         // hold count of a reentrant lock, 0 for a plain lock
	pol     uint16        // the key's policy (see policy.go), in lock's padding
}

// counter is a key's fence counter.
type counter struct {
	last    int64
	expires time.Duration // since Store.epoch
}

// sampleSize is how many entries an insertion of a fence counter, a quota
// or a record looks at to remove expired ones, as Redis's active expiry
// does: enough to keep up with a steady rate of one-off keys, small enough
// to cost little. (Locks are reclaimed from their rings instead: see
// ring.go.)
const sampleSize = 3

// shard is one part of the store: a mutex and the tables it guards.
type shard struct {
	mu       sync.Mutex
	locks    table // see table.go and ring.go
	fences   map[string]counter
	quotas   map[string]quota
	records  map[string]record
	waiters  map[string][]chan struct{}
	capacity int
	seed     maphash.Seed // the Store's, for the tag of a key (see Store.locate)

	// pols names the policies of the shard's keys; policyCap is the most
	// locks, and the most quotas, one of them may hold (see policy.go);
	// quotaPols counts the quotas per policy (locks.pols the locks).
	pols      policies
	policyCap int64
	quotaPols perPolicy

	// fenceBase is the highest fence of every counter removed from fences:
	// a new counter starts above it, so that a key's fences increase even
	// across the removal of its counter (see nextFence).
	fenceBase int64

	// recordBytes is the sum of the lengths of records' data, which
	// recordCap (the shard's share of WithMaxRecordBytes) bounds, and
	// recordPols the same per policy, which recordPolicyCap bounds.
	recordBytes     int64
	recordCap       int64
	recordPols      perPolicy
	recordPolicyCap int64

	// lockFloor, fenceFloor and quotaFloor are lower bounds of the expiry
	// of every entry in locks, fences and quotas. While now is below them
	// nothing can have expired, so a full shard refuses at once instead of
	// scanning.
	lockFloor   time.Duration
	fenceFloor  time.Duration
	quotaFloor  time.Duration
	recordFloor time.Duration

	_ [64]byte // keeps neighbouring shards' mutexes off one cache line
}

func (sh *shard) init(seed maphash.Seed, capacity int, recordCap int64, policyShare float64) {
	sh.seed = seed
	sh.fences = make(map[string]counter)
	sh.quotas = make(map[string]quota)
	sh.records = make(map[string]record)
	sh.capacity = capacity
	sh.recordCap = recordCap
	sh.policyCap = share(int64(capacity), policyShare)
	sh.recordPolicyCap = share(recordCap, policyShare)
	sh.lockFloor, sh.fenceFloor, sh.quotaFloor = math.MaxInt64, math.MaxInt64, math.MaxInt64
	sh.recordFloor = math.MaxInt64
}

// live returns the lock of key and its index slot if it has not expired,
// removing it if it has (see expireRecord). The slot stays key's until the
// index changes: until a lock is added, removed or reclaimed.
func (sh *shard) live(key string, tag uint32, now time.Duration) (lock, int, bool) {
	i, ok := sh.locks.lookup(key, tag)
	if !ok {
		return lock{}, 0, false
	}
	l := sh.locks.at(i).l
	if l.expires <= now {
		sh.locks.remove(i)
		sh.expireRecord(key, now)
		return lock{}, 0, false
	}
	return l, i, true
}

// expireRecord removes the record of key, whose lock expired, if it has
// expired too (it has, unless an Extend shortened the lock after the record
// was written).
func (sh *shard) expireRecord(key string, now time.Duration) {
	if r, ok := sh.recordOf(key); ok && r.expires <= now {
		sh.dropRecord(key, r)
	}
}

// recordOf returns key's record, if any, without a map look-up when the
// shard holds no records (a look-up in an empty map is still a call, and
// every expired or released lock asks).
func (sh *shard) recordOf(key string) (record, bool) {
	if len(sh.records) == 0 {
		return record{}, false
	}
	r, ok := sh.records[key]
	return r, ok
}

// add stores l, new and expiring ttl from now, as the lock of key, which
// has none; call roomForLock first. It reports false when the ring of
// ttl's class is full.
func (sh *shard) add(key string, tag uint32, l lock, ttl time.Duration) bool {
	if !sh.locks.insert(key, tag, l, ttl) {
		return false
	}
	sh.lockFloor = min(sh.lockFloor, l.expires)
	return true
}

// setExpiry changes the live lock of key to l, whose expiry is new (an
// extension, a re-entry that raised it), after removing the expired locks
// at the rings' heads.
func (sh *shard) setExpiry(key string, tag uint32, l lock, now time.Duration) {
	sh.reclaim(now) // removes expired locks only: key's stays
	if i, ok := sh.locks.lookup(key, tag); ok {
		sh.locks.move(i, l, l.expires-now)
		sh.lockFloor = min(sh.lockFloor, l.expires)
	}
}

// roomForLock makes room for one more lock of policy pol: it removes the
// expired locks at the rings' heads and, when the shard is full or pol
// holds its share, sweeps the shard when lockFloor says something may have
// expired (as makeRoom does for maps; locks are not sampled, the rings find
// them).
func (sh *shard) roomForLock(pol uint16, now time.Duration) bool {
	sh.reclaim(now)
	if sh.lockFits(pol) {
		return true
	}
	if now < sh.lockFloor {
		return false
	}
	sh.lockFloor = sh.locks.sweep(now)
	return sh.lockFits(pol)
}

// lockFits reports whether a new lock of policy pol fits: the shard has
// room and pol holds less than its share.
func (sh *shard) lockFits(pol uint16) bool {
	return sh.locks.n < sh.capacity && sh.locks.pols.get(pol) < sh.policyCap
}

// nextFence returns key's next fence, max(last+1, wall). It never fails:
// a key without a counter gets one, in place of another counter when the
// shard has as many as its capacity (see roomForFence), and starts it at
// fenceBase, the highest fence of every counter removed, so that a key's
// fences increase whatever the clock does, even when its counter was
// removed between two of them. The counter then lives for ttl after its
// last use.
func (sh *shard) nextFence(key string, now time.Duration, wall int64, ttl time.Duration) int64 {
	c, ok := sh.fences[key]
	if !ok {
		sh.roomForFence(now)
		c.last = sh.fenceBase
	}
	c.last = max(c.last+1, wall)
	c.expires = now + ttl
	sh.fences[key] = c
	sh.fenceFloor = min(sh.fenceFloor, c.expires)
	return c.last
}

// roomForFence makes room for one more fence counter: it removes expired
// counters (see makeRoom) and, when none expired and the shard holds as
// many counters as its capacity, the least recently used of a few
// (sampleSize) counters, whatever its key (a held key's fence was handed
// out already, and its next one comes from above fenceBase).
func (sh *shard) roomForFence(now time.Duration) {
	fits := func() bool { return len(sh.fences) < sh.capacity }
	if makeRoom(sh.fences, fits, &sh.fenceFloor, now, sh.dropCounter, sampleSize) {
		return
	}
	var victim string
	var v counter
	n := 0
	for k, c := range sh.fences {
		if n == 0 || c.expires < v.expires {
			victim, v = k, c
		}
		if n++; n == sampleSize {
			break
		}
	}
	sh.dropCounter(victim, v)
}

// dropCounter removes key's counter c, raising fenceBase to its last fence.
func (sh *shard) dropCounter(key string, c counter) {
	delete(sh.fences, key)
	sh.fenceBase = max(sh.fenceBase, c.last)
}

// expiring is an entry of a map with an expiry time: a fence counter or a
// quota.
type expiring interface{ expiry() time.Duration }

func (c counter) expiry() time.Duration { return c.expires }

// makeRoom makes room for one more entry in m: it samples a few (sample)
// entries and removes the expired ones among them (as Redis's active
// expiry does) and, when fits says the new entry does not fit and *floor
// says something may have expired, removes every expired entry and moves
// *floor, the lower bound of m's expiry times. It reports fits' answer
// then. drop removes an entry from m, and whatever counts it.
func makeRoom[V expiring](m map[string]V, fits func() bool, floor *time.Duration, now time.Duration,
	drop func(key string, v V), sample int) bool {
	if sample > 0 { // not even one: starting an iteration costs
		n := 0
		for k, v := range m {
			if n++; n > sample {
				break
			}
			if v.expiry() <= now {
				drop(k, v)
			}
		}
	}
	if fits() {
		return true
	}
	if now < *floor {
		return false
	}
	low := time.Duration(math.MaxInt64)
	for k, v := range m {
		if v.expiry() <= now {
			drop(k, v)
			continue
		}
		low = min(low, v.expiry())
	}
	*floor = low
	return fits()
}

// notify wakes the waiters of key without blocking: a waiter whose channel
// already holds a signal has not looked yet and needs no second one.
func (sh *shard) notify(key string) {
	if len(sh.waiters) == 0 {
		return
	}
	for _, ch := range sh.waiters[key] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
