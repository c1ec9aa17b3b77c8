package otelthrottle_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
)

// nearCache is an otelthrottle.NearCache that counts nothing.
type nearCache struct{}

func (nearCache) NearCacheStats() storekit.NearStats { return storekit.NearStats{} }

// TestNearCache floods a Lock on a Redis store with refusals of an id
// another store holds, until its near cache answered some, then releases
// the id there: throttle.near_cache.hits counts the limiter's
// Stats.NearHits by policy and mode, and throttle.near_cache.invalidations
// the store's, read at the collection.
func TestNearCache(t *testing.T) {
	a, b := redistest.NearPair(t)
	e := newEnv(t)
	e.obs.NearCaches(b, b)
	cfg := throttle.LockConfig{Name: "submit", Options: throttle.Options{Observer: e.obs, Logger: quiet}}
	l, err := throttle.NewLock(b, cfg)
	require.NoError(t, err)
	cfg.Observer = nil
	holder, err := throttle.NewLock(a, cfg)
	require.NoError(t, err)
	redistest.FloodNear(t, b, holder, l, "flood", 10)
	rm := e.collect(t)
	equal(t, "hits", counts(t, rm, "throttle.near_cache.hits"),
		map[string]int64{"throttle.mode=dedupe,throttle.policy=submit": int64(l.Stats().NearHits)})
	inv := b.NearCacheStats().Invalidations
	require.Positive(t, inv)
	equal(t, "invalidations (the store given twice, counted once)", counts(t, rm, "throttle.near_cache.invalidations"),
		map[string]int64{"": int64(inv)})
}
