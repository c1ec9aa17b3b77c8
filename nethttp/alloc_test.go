//go:build !race

package nethttp_test

import (
	"testing"

	"github.com/go-throttle/throttle/internal/adaptertest"
)

// TestAllocs pins the middleware's allocations per request: the key and
// token (one string) when admitted (a Dedupe key is held without a Lease:
// throttle.Lock.Hold; status recorders are reused); the key and token and
// the Lock's ContendedError when turned away (the guard writes the
// rejection without allocating it). The race detector changes allocation
// counts, hence the build tag.
func TestAllocs(t *testing.T) {
	adaptertest.Allocs(t, benchAdapter, adaptertest.Budget{Admitted: 1, Rejected: 2})
}
