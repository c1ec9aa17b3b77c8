package memstore

import (
	"strings"
	"sync"
	"time"
)

// lock is one held key. Its token is the caller's, kept without copying.
type lock struct {
	token   string
	expires time.Duration // since Store.epoch
	fence   int64         // fence of the hold, 0 if none was asked
	holds   int32         // hold count of a reentrant lock, 0 for a plain lock
	pol     uint16
}

func (l lock) expiry() time.Duration { return l.expires }
func (l lock) policy() uint16        { return l.pol }
func (l lock) size() int64           { return 1 }

// counter is a key's fence counter; counters are not counted per policy.
type counter struct {
	last    int64
	expires time.Duration
}

func (c counter) expiry() time.Duration { return c.expires }
func (c counter) policy() uint16        { return 0 }
func (c counter) size() int64           { return 1 }

// shard is one part of the store: a mutex and the tables it guards.
type shard struct {
	mu      sync.Mutex
	locks   table[lock]
	fences  table[counter]
	quotas  table[quota]
	records table[record]
	waiters map[string][]chan struct{}
	pols    policies
	// fenceBase is the highest fence of every counter removed: a new
	// counter starts above it, so a key's fences increase across removals.
	fenceBase int64
}

func (sh *shard) init(c *config, n int) {
	per := int64((c.maxKeys + n - 1) / n)
	sh.locks = newTable[lock](per, c.policyShare)
	sh.locks.onDrop = sh.lockDropped
	sh.fences = newTable[counter](per, 1)
	sh.fences.onDrop = func(_ string, c counter) { sh.fenceBase = max(sh.fenceBase, c.last) }
	sh.quotas = newTable[quota](per, c.policyShare)
	sh.records = newTable[record]((c.maxRecordBytes+int64(n)-1)/int64(n), c.policyShare)
	sh.waiters = map[string][]chan struct{}{}
}

// lockDropped removes the record of key, whose lock l was removed, when the
// record expired with it (it did, unless an Extend shortened the lock after
// the record was written).
func (sh *shard) lockDropped(key string, l lock) {
	if r, ok := sh.records.m[key]; ok && r.expires <= l.expires {
		sh.records.drop(key, r)
	}
}

// nextFence returns key's next fence, max(last+1, wall), and keeps the
// counter for ttl. It never fails: a full shard drops the least recently
// used of a few counters to make room.
func (sh *shard) nextFence(key string, now time.Duration, wall int64, ttl time.Duration) int64 {
	c, ok := sh.fences.get(key, now)
	if !ok {
		if !sh.fences.room(0, 1, now) {
			sh.dropOldestCounter()
		}
		c.last = sh.fenceBase
	}
	c.last = max(c.last+1, wall)
	c.expires = now + ttl
	sh.fences.set(key, c)
	return c.last
}

func (sh *shard) dropOldestCounter() {
	var victim string
	var v counter
	n := 0
	for k, c := range sh.fences.m {
		if n == 0 || c.expires < v.expires {
			victim, v = k, c
		}
		if n++; n == sampleSize {
			break
		}
	}
	sh.fences.drop(victim, v)
}

// notify wakes the waiters of key without blocking: a waiter whose channel
// holds a signal already has not looked yet.
func (sh *shard) notify(key string) {
	for _, ch := range sh.waiters[key] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// maxPolicies is how many policies a shard tells apart; the keys of further
// ones count as the policy "", so that keys of another shape cannot grow a
// table per key.
const maxPolicies = 1 << 10

// policies gives the policies of a shard's keys small ids (0 is "").
type policies map[string]uint16

// id returns the id of key's policy.
func (p *policies) id(key string) uint16 {
	name := policyOf(key)
	if name == "" {
		return 0
	}
	id, ok := (*p)[name]
	if !ok && len(*p) < maxPolicies-1 {
		if *p == nil {
			*p = policies{}
		}
		id = uint16(len(*p) + 1)
		(*p)[strings.Clone(name)] = id // not the whole key kept alive
	}
	return id
}

// policyOf returns the policy in key's hash tag: what lies between the first
// '{' and the next ':' (store.Key escapes both in names and identities), or
// "" when key has no such tag.
func policyOf(key string) string {
	_, rest, ok := strings.Cut(key, "{")
	name, _, found := strings.Cut(rest, ":")
	if !ok || !found || strings.Contains(name, "}") {
		return ""
	}
	return name
}
