//go:build !race

package overload_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/go-throttle/throttle/throttle/overload"
)

// TestAllocs pins the allocations of the permit path (the race detector
// changes allocation counts, hence the build tag): none for an admission
// and its End, with or without the window's judgement.
func TestAllocs(t *testing.T) {
	l := newLimiter(t, overload.Config{})
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		p, err := l.Acquire(ctx, overload.Normal)
		if err != nil {
			t.Fatal(err)
		}
		p.End()
	})
	assert.Zero(t, allocs)
}
