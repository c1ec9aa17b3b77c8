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

	// recordBytes is the sum of the lengths of records' data, which
	// recordCap (the shard's share of WithMaxRecordBytes) bounds.
	recordBytes int64
	recordCap   int64

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

func (sh *shard) init(seed maphash.Seed, capacity int, recordCap int64) {
	sh.seed = seed
	sh.fences = make(map[string]counter)
	sh.quotas = make(map[string]quota)
	sh.records = make(map[string]record)
	sh.capacity = capacity
	sh.recordCap = recordCap
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

// roomForLock makes room for one more lock: it removes the expired locks
// at the rings' heads and, when the shard is full, sweeps it when
// lockFloor says something may have expired (as makeRoom does for maps;
// locks are not sampled, the rings find them).
func (sh *shard) roomForLock(now time.Duration) bool {
	sh.reclaim(now)
	if sh.locks.n < sh.capacity {
		return true
	}
	if now < sh.lockFloor {
		return false
	}
	sh.lockFloor = sh.locks.sweep(now)
	return sh.locks.n < sh.capacity
}

// nextFence returns key's next fence, max(last+1, wall), or false when the
// key has no counter and there is no room for one. The counter then lives
// for ttl, and in any case while key's lock does (see heldCounter).
func (sh *shard) nextFence(key string, now time.Duration, wall int64, ttl time.Duration) (int64, bool) {
	c, ok := sh.fences[key]
	if ok && c.expires <= now {
		// Removed or kept, the expired counter's last value still
		// counts in the max below.
		c, ok = expire(sh.fences, key, c, now, sh.heldCounter)
	}
	if !ok && !sh.roomForFence(now) {
		return 0, false
	}
	c.last = max(c.last+1, wall)
	c.expires = now + ttl
	sh.fences[key] = c
	sh.fenceFloor = min(sh.fenceFloor, c.expires)
	return c.last, true
}

// roomForFence makes room for one more fence counter (see makeRoom). The
// counter of a key whose lock lives is not removed, even when its fence TTL
// ran out (a lock TTL, or a lease kept alive, can outlast the fence TTL):
// see heldCounter.
func (sh *shard) roomForFence(now time.Duration) bool {
	return makeRoom(sh.fences, sh.capacity, &sh.fenceFloor, now, sh.heldCounter, sampleSize)
}

// heldCounter keeps the expired counter c of key while key's lock lives: it
// returns c with the lock's expiry, and true. Were the counter dropped, the
// next fence of the key would restart from the wall clock, which a clock
// step back can put below the fences already handed out for it.
func (sh *shard) heldCounter(key string, c counter, now time.Duration) (counter, bool) {
	l, ok := sh.locks.get(key, tagOf(maphash.String(sh.seed, key)))
	if !ok || l.expires <= now {
		return c, false
	}
	c.expires = l.expires
	return c, true
}

// expiring is an entry of a map with an expiry time: a fence counter or a
// quota.
type expiring interface{ expiry() time.Duration }

func (c counter) expiry() time.Duration { return c.expires }

// makeRoom makes room for one more entry in m: it samples a few (sample)
// entries and removes the expired ones among them (as Redis's active
// expiry does) and,
// when m is full and *floor says something may have expired, removes every
// expired entry and moves *floor, the lower bound of m's expiry times. It
// reports whether a new entry fits. An expired entry for which keep (when
// not nil) answers true stays, with the value keep returned, whose expiry
// must be later than now.
func makeRoom[V expiring](m map[string]V, capacity int, floor *time.Duration, now time.Duration,
	keep func(key string, v V, now time.Duration) (V, bool), sample int) bool {
	if sample > 0 { // not even one: starting an iteration costs
		n := 0
		for k, v := range m {
			if n++; n > sample {
				break
			}
			if v.expiry() <= now {
				expire(m, k, v, now, keep)
			}
		}
	}
	if len(m) < capacity {
		return true
	}
	if now < *floor {
		return false
	}
	low := time.Duration(math.MaxInt64)
	for k, v := range m {
		if v.expiry() <= now {
			var kept bool
			if v, kept = expire(m, k, v, now, keep); !kept {
				continue
			}
		}
		low = min(low, v.expiry())
	}
	*floor = low
	return len(m) < capacity
}

// expire removes the expired entry k of m, unless keep keeps it: then it
// stores and returns keep's value, and true.
func expire[V expiring](m map[string]V, k string, v V, now time.Duration,
	keep func(key string, v V, now time.Duration) (V, bool)) (V, bool) {
	if keep != nil {
		if v, ok := keep(k, v, now); ok {
			m[k] = v
			return v, true
		}
	}
	delete(m, k)
	return v, false
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
