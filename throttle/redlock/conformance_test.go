package redlock_test

import (
	"testing"

	"github.com/go-throttle/throttle/throttle/store"
	"github.com/go-throttle/throttle/throttle/storetest"
)

// TestConformance runs the shared store suite on a Redlock store over three
// redis-servers, one store for every check (the checks use fresh keys).
//
// The test stores' node timeout (testNodeTimeout) matters here: the
// contention check starts 200 acquisitions at once, 600 node calls, and on
// a small test machine under the race detector queueing for the client's
// connections alone can take longer than the default 100 ms.
func TestConformance(t *testing.T) {
	s := startNodes(t, 3, false).store(t)
	storetest.Run(t, func(t *testing.T) store.Store { return s })
}

// TestConformanceOnStores runs the suite on a Redlock store over three
// rueidisstore stores (NewOnStores), whose nodes pipeline concurrent calls.
func TestConformanceOnStores(t *testing.T) {
	s := startNodes(t, 3, false).rueidisStore(t)
	storetest.Run(t, func(t *testing.T) store.Store { return s })
}
