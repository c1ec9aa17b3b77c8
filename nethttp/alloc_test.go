//go:build !race

package nethttp_test

import (
	"testing"

	"github.com/go-throttle/throttle/internal/adaptertest"
)

// TestAllocs pins the middleware's allocations per request: the key and
// token (one string), the lease and the status recorder when admitted; the
// key and token, the Limiter's ContendedError and the Rejection when
// turned away (the race detector changes allocation counts, hence the
// build tag).
func TestAllocs(t *testing.T) {
	adaptertest.Allocs(t, benchAdapter, adaptertest.Budget{Admitted: 3, Rejected: 3})
}
