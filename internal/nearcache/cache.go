// Package nearcache holds a process's memory of refusals ("key refused
// until T") in front of a remote store: bounded, sharded, and cleared by
// invalidations that the store's server reports.
//
// A refusal is only kept when no invalidation of its key (and no Clear)
// came between the Stamp taken before the remote call and the Put after
// it, so an invalidation that raced the call is never lost.
package nearcache

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// Entry is one remembered refusal: a lock held by Holder until Until, a
// GCRA quota of Interval and Burst whose theoretical arrival time is Until,
// or a strict quota's (Strict) whose Remaining holds until Until.
type Entry struct {
	Until    time.Time
	Interval time.Duration // 0 for a lock
	Burst    int
	Holder   string  // a lock's
	Strict   *Strict // a strict quota's
}

// Strict is what a strict quota's refusal of Cost says beyond Until: a
// strict quota's room is known only where the store read its log.
type Strict struct {
	Window    time.Duration
	Limit     int
	Cost      int       // the charge refused
	Remaining int       // until Until
	Retry     time.Time // when Cost fits
	Reset     time.Time // when the quota is full again
}

// Stats counts a cache's work since it was made.
type Stats struct {
	Hits          uint64 // refusals answered by Get
	Invalidations uint64 // entries dropped by the server's invalidations or a Clear
	Entries       int    // entries now held, expired ones included
}

const shards = 64

// Cache is safe for concurrent use; its zero value is not (use New).
type Cache struct {
	seed                maphash.Seed
	now                 func() time.Time
	max                 int // entries per shard
	ready               atomic.Bool
	hits, invalidations atomic.Uint64
	shards              [shards]shard
}

type shard struct {
	mu  sync.RWMutex
	gen atomic.Uint64    // bumped by every invalidation of a key of the shard
	m   map[string]Entry // under mu
}

// New returns a cache of at most size entries (at least one per shard),
// reading time from now (time.Now when nil). It refuses Puts until Ready.
func New(size int, now func() time.Time) *Cache {
	if now == nil {
		now = time.Now
	}
	c := &Cache{seed: maphash.MakeSeed(), now: now, max: max(size/shards, 1)}
	for i := range c.shards {
		c.shards[i].m = map[string]Entry{}
	}
	return c
}

func (c *Cache) shard(key string) *shard {
	return &c.shards[maphash.String(c.seed, key)%shards]
}

// Now returns the cache's time.
func (c *Cache) Now() time.Time { return c.now() }

// Stamp returns key's invalidation generation, to take before the remote
// call whose refusal Put may keep; ok is false while the cache is not Ready.
func (c *Cache) Stamp(key string) (gen uint64, ok bool) {
	if !c.ready.Load() {
		return 0, false
	}
	return c.shard(key).gen.Load(), c.ready.Load()
}

// Put keeps e for key unless key was invalidated (or the cache cleared)
// since Stamp gave gen; a full shard drops an expired entry, else any one.
func (c *Cache) Put(key string, e Entry, gen uint64) bool {
	sh := c.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.gen.Load() != gen || !c.ready.Load() || !e.Until.After(c.now()) {
		return false
	}
	if _, ok := sh.m[key]; !ok && len(sh.m) >= c.max {
		now, victim := c.now(), ""
		for k, old := range sh.m { // map order: an arbitrary victim
			victim = k
			if !old.Until.After(now) {
				break
			}
		}
		delete(sh.m, victim)
	}
	sh.m[key] = e
	return true
}

// Get returns key's entry unexpired at now, the cache's Now (read only
// when key has an entry: a miss, the usual answer, costs no clock); Hit
// counts the refusals the caller answered with it.
func (c *Cache) Get(key string) (e Entry, now time.Time, ok bool) {
	sh := c.shard(key)
	sh.mu.RLock()
	e, ok = sh.m[key]
	sh.mu.RUnlock()
	if !ok {
		return Entry{}, time.Time{}, false
	}
	if now = c.now(); !e.Until.After(now) {
		return Entry{}, now, false
	}
	return e, now, true
}

// Hit counts one refusal answered from the cache.
func (c *Cache) Hit() { c.hits.Add(1) }

// Invalidate drops keys: the server reported that they changed (or this
// process changed them).
func (c *Cache) Invalidate(keys ...string) {
	for _, k := range keys {
		sh := c.shard(k)
		sh.mu.Lock()
		sh.gen.Add(1)
		c.drop(sh, k)
		sh.mu.Unlock()
	}
}

// drop deletes k's entry from sh, whose lock the caller holds.
func (c *Cache) drop(sh *shard, k string) {
	if _, ok := sh.m[k]; ok {
		delete(sh.m, k)
		c.invalidations.Add(1)
	}
}

// Forget is Invalidate of one key that this process changed, as cheap as
// a Get when key has no entry (a release of a lock nobody was refused):
// the generation is bumped without the shard's lock, then the entry, if
// any, is dropped under it. A Put racing it either reads the new
// generation and keeps nothing, or read the old one holding the lock
// before the bump, so its entry is there for Forget to drop.
func (c *Cache) Forget(key string) {
	sh := c.shard(key)
	sh.gen.Add(1)
	sh.mu.RLock()
	_, ok := sh.m[key]
	sh.mu.RUnlock()
	if ok {
		sh.mu.Lock()
		c.drop(sh, key)
		sh.mu.Unlock()
	}
}

// Ready makes the cache keep refusals (ready) or drops every entry and
// keeps none until it is ready again (the invalidations may be lost).
func (c *Cache) Ready(ready bool) {
	if ready {
		c.ready.Store(true)
		return
	}
	c.ready.Store(false)
	c.Clear()
}

// Clear drops every entry, as if each key were invalidated (FLUSHALL).
func (c *Cache) Clear() {
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		sh.gen.Add(1)
		c.invalidations.Add(uint64(len(sh.m)))
		clear(sh.m)
		sh.mu.Unlock()
	}
}

// Stats returns the cache's counts.
func (c *Cache) Stats() Stats {
	st := Stats{Hits: c.hits.Load(), Invalidations: c.invalidations.Load()}
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		st.Entries += len(sh.m)
		sh.mu.Unlock()
	}
	return st
}
