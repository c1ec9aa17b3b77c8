//go:build !race

package promthrottle_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/go-throttle/throttle/throttle/promthrottle"
)

// TestObserveAllocs pins Observe's steady state at no allocation for every
// kind of event, once its series exist (the race detector changes
// allocation counts, hence the build tag). Allocation counts are
// deterministic, unlike times.
func TestObserveAllocs(t *testing.T) {
	obs := promthrottle.New()
	ctx := context.Background()
	for _, e := range allEvents("allocs") {
		obs.Observe(ctx, e) // makes the series
		assert.Zero(t, testing.AllocsPerRun(100, func() { obs.Observe(ctx, e) }), "Observe(%s op %q): allocations", e.Kind, e.Op)
	}
}
