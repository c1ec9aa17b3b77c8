//go:build !race

package ginadapter_test

import (
	"testing"

	"github.com/go-throttle/throttle/internal/adaptertest"
)

// TestAllocs pins the middleware's allocations per request: the key and
// token (one string) and the lease when admitted (gin's writer notes the
// status itself); the key and token, the Limiter's ContendedError and the
// Rejection when turned away (the race detector changes allocation
// counts, hence the build tag).
func TestAllocs(t *testing.T) {
	adaptertest.Allocs(t, adapter, adaptertest.Budget{Admitted: 2, Rejected: 3})
}
