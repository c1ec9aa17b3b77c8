package throttle

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle/store"
)

// bareStore is a store that no test calls: these tests only make policies.
type bareStore struct{ store.Store }

// garbage is where TestNameClaimsGoWithTheirPolicies makes work for the
// collector.
var garbage []byte

// TestNameClaimsGoWithTheirPolicies checks that a name stays claimed while
// a policy holding it lives, and not after: the registry keeps neither the
// policies nor the stores alive, and forgets the names of dead ones.
func TestNameClaimsGoWithTheirPolicies(t *testing.T) {
	opt := Options{Prefix: "names-test"} // whatever other tests hold, count these
	st := &bareStore{}
	first, err := NewLock(st, LockConfig{Name: "n", Options: opt})
	require.NoError(t, err)
	other := LockConfig{Name: "n", TTL: time.Minute, Options: opt}
	runtime.GC()
	_, err = NewLock(st, other)
	require.ErrorIs(t, err, store.ErrInvalid, "a second config of a live policy's name")
	runtime.KeepAlive(first)

	freed := false
	for i := 0; i < 10 && !freed; i++ {
		runtime.GC()
		_, err = NewLock(st, other)
		freed = err == nil
	}
	require.True(t, freed, "a name still claimed after its policy was collected")

	// Many policies come and go on stores that come and go, at addresses
	// that are reused: none finds a dead one's claim, and the registry
	// stays bounded.
	for i := range 20000 {
		c := LockConfig{Name: "n", Options: opt}
		if i%2 == 1 {
			c.TTL = time.Minute
		}
		_, err := NewLock(&bareStore{}, c)
		require.NoError(t, err, "policy %d", i)
		garbage = make([]byte, 4096) // collections run while claims are made
	}
	names.Lock()
	n := 0
	for at := range names.m {
		if at.prefix == opt.Prefix {
			n++
		}
	}
	names.Unlock()
	require.Less(t, n, 5000, "names of collected policies kept")
}
