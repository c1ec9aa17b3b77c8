package storetest_test

import (
	"testing"

	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
	"github.com/go-throttle/throttle/throttle/storetest"
)

// A store package runs the suite from one of its tests. The factory gets
// each subtest's t, so it can start a server or register a cleanup; since
// every check uses fresh keys it may also return one shared store.
func ExampleRun() {
	conformance := func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store {
			return memstore.New()
		})
	}
	// In your package: func TestConformance(t *testing.T) { conformance(t) }
	_ = conformance
}
