//go:build !race

package nethttp_test

import (
	"testing"

	"github.com/go-throttle/throttle/internal/adaptertest"
)

// TestAllocs pins the middleware's allocations per request: the key and
// token (one string) and the Lease when admitted (every admitted lock
// request has a lease; status recorders are reused); the key and token and
// the Lock's ContendedError when turned away (the guard writes the
// rejection without allocating it). The race detector changes allocation
// counts, hence the build tag.
func TestAllocs(t *testing.T) {
	adaptertest.Allocs(t, benchAdapter, adaptertest.Budget{Admitted: 2, Rejected: 2})
}
