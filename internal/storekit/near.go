package storekit

import (
	"slices"
	"sync"

	"github.com/go-throttle/throttle/throttle/store"
)

// Near is implemented by stores that remember refusals in this process
// (the Redis stores' near cache): the limiter asks it before it bounds a
// store call, so that a remembered refusal costs neither a round trip nor
// a timer. Neither method ever admits.
type Near interface {
	// Refused returns the store's refusal of req, when it remembers one.
	Refused(req store.Request) (store.Grant, bool)
	// Spent returns the store's refusal of a charge of cost under r on
	// key, when it remembers one.
	Spent(key string, r store.Rate, cost int) (store.Decision, bool)
	// Forget drops what it remembers of key: a waiter woken by the key's
	// release asks the store, as the release's message may come before
	// Redis's invalidation of the entry.
	Forget(key string)
}

// NearStats counts a near cache's work: refusals answered in the process
// (Hits), entries dropped because Redis reported a change of their key or
// the cache was emptied (Invalidations), entries held now (Entries). On
// tells whether the cache may answer at all.
type NearStats struct {
	On                  bool
	Hits, Invalidations uint64
	Entries             int
}

// NearCounter is a store whose near cache an observer counts.
type NearCounter interface{ NearCacheStats() NearStats }

// NearCounters are the near caches an observer reads at each collection;
// safe for concurrent use.
type NearCounters struct {
	mu   sync.Mutex
	list []NearCounter
}

// Add adds st unless it is nil or added already.
func (n *NearCounters) Add(st NearCounter) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if st != nil && !slices.Contains(n.list, st) {
		n.list = append(n.list, st)
	}
}

// Invalidations sums the invalidations of the near caches added; ok is
// false when there is none.
func (n *NearCounters) Invalidations() (sum uint64, ok bool) {
	n.mu.Lock()
	list := n.list
	n.mu.Unlock()
	for _, st := range list {
		sum += st.NearCacheStats().Invalidations
	}
	return sum, len(list) > 0
}
