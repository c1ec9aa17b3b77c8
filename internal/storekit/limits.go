package storekit

import (
	"fmt"
	"slices"

	"github.com/go-throttle/throttle/throttle/store"
)

// MaxLimits is the most limits one AllowAll decides.
const MaxLimits = 16

// CheckLimits returns an error matching store.ErrInvalid when no store can
// decide cost against limits as one AllowAll: none or more than MaxLimits,
// an empty or repeated key, or a rate Check refuses.
func CheckLimits(limits []store.Limit, cost int) error {
	if len(limits) < 1 || len(limits) > MaxLimits {
		return fmt.Errorf("%w: %d limits, want 1 to %d", store.ErrInvalid, len(limits), MaxLimits)
	}
	for i, l := range limits {
		if l.Key == "" {
			return fmt.Errorf("%w: limit %d has an empty key", store.ErrInvalid, i)
		}
		if slices.ContainsFunc(limits[:i], func(o store.Limit) bool { return o.Key == l.Key }) {
			return fmt.Errorf("%w: key %q in two limits", store.ErrInvalid, l.Key)
		}
		if err := Check(l.Rate, cost); err != nil {
			return fmt.Errorf("limit %d: %w", i, err)
		}
	}
	return nil
}
