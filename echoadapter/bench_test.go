package echoadapter_test

import (
	"testing"

	"github.com/go-throttle/throttle/internal/adaptertest"
)

// BenchmarkMiddleware: one goroutine, memory store, Dedupe; see
// adaptertest.Bench for the key cardinality of each case.
func BenchmarkMiddleware(b *testing.B) { adaptertest.Bench(b, adapter) }
