//go:build !race

package rueidisstore_test

import (
	"testing"

	"github.com/go-throttle/throttle/internal/redistest"
)

// TestAllocs pins the allocations of a Lock on the store, against a real
// server (the race detector changes the counts, hence the build tag). For a
// caller on context.Background an acquisition makes the key and token (one
// string) and the lease, nothing in the watch of the call nor in the
// adapter (the TTL's text is cached); a release adds the key's record and
// channel names (one string). A caller whose context can be cancelled adds
// its acquisition's call (whose Done channel is made only for a client that
// waits on it: rueidis sending alone on an idle pipeline does not); its
// release shares a call, seen through the lease.
func TestAllocs(t *testing.T) {
	s, _ := newStore(t)
	redistest.CheckLockAllocs(t, s, redistest.LockAllocs{Acquire: 2, Cycle: 3, CancellableAcquire: 3, CancellableCycle: 4})
}
