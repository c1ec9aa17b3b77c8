package throttle

import (
	"reflect"
	"sync"
	"time"
	"weak"

	"github.com/go-throttle/throttle/throttle/store"
)

// nameUse is one policy's claim on its name in a store under a prefix:
// what the name's keys hold and for how long, which every policy of the
// name must agree on. How a caller waits (Wait, Backoff), caps its work
// (MaxHold), fails (Timeout, WhenStoreFails, Fallback, DryRun) and reports
// (Logger, Observer) is its own: a worker may wait for a key that a
// handler only tries. Every limiter of the name holds the claim; names
// holds it weakly.
type nameUse struct {
	mode             Mode
	ttl              time.Duration
	fence, reentrant bool
	holders          int
}

// nameAt is where a name is claimed: a store, a prefix and the name. The
// store is held weakly, by a pointer that no later store compares equal to
// even at the same address.
type nameAt struct {
	store        weak.Pointer[byte]
	prefix, name string
}

// names maps each name in use to its claim, weakly: the claim goes when the
// last limiter holding it does, and its entry when a claim finds the map
// grown to sweep entries: twice what the last sweep left.
var names = struct {
	sync.Mutex
	m     map[nameAt]weak.Pointer[nameUse]
	sweep int
}{m: map[nameAt]weak.Pointer[nameUse]{}}

// claimName claims p's name in st for a new limiter, which must hold the
// claim as long as it lives. The keys of one name are one policy's: a
// second limiter of the name is refused when its kind, Mode, TTL, Fence,
// Reentrant or Holders differ (two adapters may build one policy twice). A
// store that is not a pointer cannot be told apart from another, and is
// not checked.
func claimName(st store.Store, p policy) (*nameUse, error) {
	use := &nameUse{mode: p.Mode, ttl: p.TTL, fence: p.Fence, reentrant: p.Reentrant, holders: max(p.Holders, 1)}
	at := nameAt{identity(st), p.Prefix, p.Name}
	if at.store == (weak.Pointer[byte]{}) {
		return use, nil
	}
	names.Lock()
	defer names.Unlock()
	if prev := names.m[at].Value(); prev != nil {
		if *prev != *use {
			return nil, invalid("policy %q: this store already has a %v policy of this name and prefix whose keys differ "+
				"(mode, TTL, Fence, Reentrant or Holders): share that policy, or name this one otherwise", p.Name, prev.mode)
		}
		return prev, nil
	}
	if len(names.m) >= names.sweep {
		// Rarely: reading a weak pointer keeps its object for the
		// collection under way, if one is.
		for k, w := range names.m {
			if k.store.Value() == nil || w.Value() == nil {
				delete(names.m, k)
			}
		}
		names.sweep = max(2*len(names.m), 64)
	}
	names.m[at] = weak.Make(use)
	return use, nil
}

// identity returns a weak pointer to what st points to, or none when it
// is not a pointer.
func identity(st store.Store) weak.Pointer[byte] {
	if v := reflect.ValueOf(st); v.Kind() == reflect.Pointer {
		return weak.Make((*byte)(v.UnsafePointer()))
	}
	return weak.Pointer[byte]{}
}
