//go:build !race

package redisstore_test

import (
	"testing"

	"github.com/go-throttle/throttle/internal/redistest"
)

// TestAllocs pins the allocations of a Lock on the store, against a real
// server (the race detector changes the counts, hence the build tag): a
// Lock's own two (the key and token in one string, the lease) and go-redis's
// command (an acquisition as a bare SetNX makes it, 8); a release adds
// go-redis's EVALSHA (its keys and args boxed, the command, its argument
// array; the digest boxed once, not per call) and the key's record and
// channel names (one string). The argument arrays are not pooled: a
// go-redis hook may keep a command's arguments. A caller whose context can be
// cancelled adds its acquisition's call and that call's Done channel
// (go-redis asks for it before it takes a connection); its release shares
// a call, seen through the lease.
func TestAllocs(t *testing.T) {
	s, _, _ := newStore(t)
	redistest.CheckLockAllocs(t, s, redistest.LockAllocs{Acquire: 10, Cycle: 20, CancellableAcquire: 12, CancellableCycle: 22})
}
