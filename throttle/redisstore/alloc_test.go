//go:build !race

package redisstore_test

import (
	"testing"

	"github.com/go-throttle/throttle/internal/redistest"
)

// TestAllocs pins the allocations of a Lock on the store, against a real
// server (the race detector changes the counts, hence the build tag): a
// Lock's own two (the key and token in one string, the lease) and go-redis's
// command, one fewer than a bare SetNX makes (its argument array is
// pooled: 7); a release adds go-redis's EVALSHA (its keys and args boxed,
// the command; the array pooled, the digest boxed once) and the key's
// record and channel names (one string). A caller whose context can be
// cancelled adds its acquisition's call and that call's Done channel
// (go-redis asks for it before it takes a connection); its release shares
// a call, seen through the lease.
func TestAllocs(t *testing.T) {
	s, _, _ := newStore(t)
	redistest.CheckLockAllocs(t, s, redistest.LockAllocs{Acquire: 9, Cycle: 18, CancellableAcquire: 11, CancellableCycle: 20})
}
