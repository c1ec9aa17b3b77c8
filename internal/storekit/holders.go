package storekit

import (
	"fmt"

	"github.com/go-throttle/throttle/throttle/store"
)

// MaxHolders is the most holders a store lets one key have at once; a
// Request.Holders above it is refused as invalid.
const MaxHolders = 1 << 20

// CheckHolders returns an error matching store.ErrInvalid for a request
// whose Holders no store takes: a negative count, one above MaxHolders, or a
// semaphore (Holders above 1) that asks for reentrancy too.
func CheckHolders(name string, req store.Request) error {
	switch {
	case req.Holders < 0 || req.Holders > MaxHolders:
		return fmt.Errorf("%w: %s: holders %d is not between 0 and %d", store.ErrInvalid, name, req.Holders, MaxHolders)
	case req.Holders > 1 && req.Reentrant:
		return fmt.Errorf("%w: %s: a key with several holders cannot be reentrant", store.ErrInvalid, name)
	}
	return nil
}
