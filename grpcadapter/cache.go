package grpcadapter

import (
	"hash/maphash"
	"sync/atomic"
)

// cacheSlots is the size of each cache: a power of two.
const cacheSlots = 1024

// seed hashes the caches' keys.
var seed = maphash.MakeSeed()

// cache keeps values that every call would otherwise build again (a
// refusal's status, the header metadata), each in the slot its key's hash
// picks: a hit is an atomic load and a comparison of keys, a miss builds
// the value and replaces the slot's. It never holds more than cacheSlots
// values, whatever the keys, and values in it are shared: never changed.
type cache[K comparable, V any] struct {
	slots [cacheSlots]atomic.Pointer[entry[K, V]]
}

type entry[K comparable, V any] struct {
	key K
	val V
}

// get returns the value of key, whose hash is h, building it with build
// (a function that captures nothing, so that none is allocated) on a miss.
func (c *cache[K, V]) get(h uint64, key K, build func(K) V) V {
	slot := &c.slots[h&(cacheSlots-1)]
	if e := slot.Load(); e != nil && e.key == key {
		return e.val
	}
	v := build(key)
	slot.Store(&entry[K, V]{key, v})
	return v
}
