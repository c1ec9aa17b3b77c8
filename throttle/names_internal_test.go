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

	gone := func(cond func() bool) bool {
		for range 10 {
			if runtime.GC(); cond() {
				return true
			}
		}
		return false
	}
	require.True(t, gone(func() bool { _, err := NewLock(st, other); return err == nil }),
		"a name still claimed after its policy was collected")

	for range 100 {
		_, err := NewLock(&bareStore{}, LockConfig{Name: "n", Options: opt})
		require.NoError(t, err)
	}
	require.True(t, gone(func() bool {
		_, _ = NewLock(&bareStore{}, LockConfig{Name: "sweep", Options: opt}) // a claim sweeps the dead
		names.Lock()
		defer names.Unlock()
		n := 0
		for at := range names.m {
			if at.prefix == opt.Prefix {
				n++
			}
		}
		return n <= 2
	}), "names of collected policies kept")
}
