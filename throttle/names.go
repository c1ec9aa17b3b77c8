package throttle

import (
	"reflect"
	"sync"
	"weak"

	"github.com/go-throttle/throttle/throttle/store"
)

// nameUse is one policy's claim on its name in a store under a prefix: its
// config with defaults, less the handles that only shape how this process
// waits and reports (Backoff, Logger, Observer), with the Fallback compared
// by identity. Every limiter of the name holds it; names holds it weakly.
type nameUse struct {
	p        policy
	fallback weak.Pointer[byte]
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
// second limiter of the name is refused unless its config is the first's
// (two adapters may build one policy twice). A store that is not a pointer
// cannot be told apart from another, and is not checked.
func claimName(st store.Store, p policy) (*nameUse, error) {
	use := &nameUse{p: p, fallback: identity(p.Fallback)}
	use.p.Backoff, use.p.Logger, use.p.Observer, use.p.Fallback = nil, nil, nil, nil
	at := nameAt{identity(st), p.Prefix, p.Name}
	if at.store == (weak.Pointer[byte]{}) {
		return use, nil
	}
	names.Lock()
	defer names.Unlock()
	if prev := names.m[at].Value(); prev != nil {
		if prev.fallback != use.fallback || !reflect.DeepEqual(prev.p, use.p) {
			return nil, invalid("policy %q: this store already has a %v policy of this name and prefix with another config: "+
				"one name is one policy's keys, so share that policy or name this one otherwise", p.Name, prev.p.Mode)
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
