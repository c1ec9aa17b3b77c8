package promthrottle_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/promthrottle"
)

// nearCache is a promthrottle.NearCache that counts nothing.
type nearCache struct{}

func (nearCache) NearCacheStats() storekit.NearStats { return storekit.NearStats{} }

// TestNearCache floods a Lock on a Redis store with refusals of an id
// another store holds, until its near cache answered some, then releases
// the id there: throttle_near_cache_hits_total counts the limiter's
// Stats.NearHits by policy and mode, and the invalidations counter the
// store's, read at the scrape.
func TestNearCache(t *testing.T) {
	a, b := redistest.NearPair(t)
	obs := promthrottle.New().NearCaches(b, b)
	reg := newRegistry(t, obs)
	cfg := throttle.LockConfig{Name: "submit"}
	l := newLock(t, b, obs, cfg)
	redistest.FloodNear(t, b, newLock(t, a, nil, cfg), l, "flood", 10)
	fs := gather(t, reg)
	require.Equal(t, map[string]float64{labels("policy=submit", "mode=dedupe"): float64(l.Stats().NearHits)},
		fs.values(t, "throttle_near_cache_hits_total"), "hits")
	inv := b.NearCacheStats().Invalidations
	require.Positive(t, inv)
	require.Equal(t, map[string]float64{"": float64(inv)}, fs.values(t, "throttle_near_cache_invalidations_total"),
		"invalidations (the store given twice, counted once)")
}
