package promthrottle

import (
	"fmt"
	"math"
	"slices"

	"github.com/go-throttle/throttle/throttle/memstore"
)

// Option configures New.
type Option func(*config)

type config struct {
	stores       []*memstore.Store
	storeBuckets []float64
	holdBuckets  []float64
}

// defaultStoreBuckets resolve store calls from 50µs (a memstore call, a
// Redis round trip on the same host) to 1s (far past the default 100ms
// Options.Timeout, where a call is a timeout whatever its bucket).
var defaultStoreBuckets = []float64{
	0.00005, 0.0001, 0.00025, 0.0005,
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1,
}

// defaultHoldBuckets resolve holds from 1ms (a Dedupe handler that failed at
// once) to 5 minutes (an Exclusive export or a job under Lock.Do).
var defaultHoldBuckets = []float64{
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10,
	30, 60, 120, 300,
}

// WithMemstore makes the Observer report throttle_memstore_keys: how many
// keys the given in-memory stores hold together at scrape time, counted by
// memstore.Store.Len (which locks each shard in turn, so it is read per
// scrape, never per request). Pass every memstore of the process (the
// store of single-instance policies, the Fallback of FailOver ones), in one
// call or several; a store passed twice is counted once.
//
// The gauge is one unlabelled sum, because what it watches is the
// process's memory, which all the stores share: compare it with the sum of
// their memstore.WithMaxKeys bounds, past which a store refuses new keys.
// For a per-store figure, call Len yourself.
func WithMemstore(stores ...*memstore.Store) Option {
	return func(c *config) {
		for _, st := range stores {
			if st != nil && !slices.Contains(c.stores, st) {
				c.stores = append(c.stores, st)
			}
		}
	}
}

// WithStoreBuckets replaces the upper bounds, in seconds, of the
// throttle_store_duration_seconds buckets: by default 50µs, 100µs, 250µs,
// 500µs, 1ms, 2.5ms, 5ms, 10ms, 25ms, 50ms, 100ms, 250ms, 500ms and 1s.
// Use it for a store much farther away than a data centre's Redis, whose
// calls would all fall in the top buckets. The bounds must be positive,
// finite and increasing; New panics otherwise.
func WithStoreBuckets(bounds ...float64) Option {
	return func(c *config) { c.storeBuckets = slices.Clone(bounds) }
}

// WithHoldBuckets replaces the upper bounds, in seconds, of the
// throttle_hold_duration_seconds buckets: by default 1ms, 2.5ms, 5ms, 10ms,
// 25ms, 50ms, 100ms, 250ms, 500ms, 1s, 2.5s, 5s, 10s, 30s, 1min, 2min and
// 5min. Use it when jobs under Lock.Do hold their keys for longer. The
// bounds must be positive, finite and increasing; New panics otherwise.
func WithHoldBuckets(bounds ...float64) Option {
	return func(c *config) { c.holdBuckets = slices.Clone(bounds) }
}

// mustBeBuckets panics unless b are usable bucket bounds. The Prometheus
// client would only find out when the first request is observed.
func mustBeBuckets(option string, b []float64) {
	if len(b) == 0 {
		panic(fmt.Sprintf("promthrottle: %s needs at least one bound", option))
	}
	for i, v := range b {
		if !(v > 0) || math.IsInf(v, 0) || (i > 0 && v <= b[i-1]) {
			panic(fmt.Sprintf("promthrottle: %s bounds must be positive, finite and increasing, got %v", option, b))
		}
	}
}
