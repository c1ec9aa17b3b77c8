package throttle

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// The errors to branch on with errors.Is. Every error of a limiter or a
// Lease matches at most one of them, or store.ErrInvalid (an unusable config
// or argument); context errors stay themselves.
var (
	// ErrContended: somebody else holds the key. The error is a
	// *ContendedError, which says for how long.
	ErrContended = errors.New("throttle: key is held by another owner")
	// ErrStore: the store did not answer in time or failed. errors.Unwrap
	// gives the store's own error.
	ErrStore = errors.New("throttle: store unavailable")
	// ErrLost: a held key expired or was taken before it was released.
	ErrLost = errors.New("throttle: lease lost")
	// ErrNotHeld: the lease no longer holds the key (Release, Extend, Record).
	ErrNotHeld = errors.New("throttle: lease not held")
)

// ContendedError is the ErrContended of an acquisition that found the key
// held, or of a request that a Quota refused (Admit).
type ContendedError struct {
	// RetryAfter is how long the holder keeps the key, as the store says:
	// at least 1ms, or -1 when the key has no expiry. For a Quota, how
	// long until the same cost would be allowed.
	RetryAfter time.Duration
}

// Error says that the key is held and for how long.
func (e *ContendedError) Error() string {
	return fmt.Sprintf("throttle: key is held by another owner (retry after %v)", e.RetryAfter)
}

// Is reports whether target is ErrContended.
func (e *ContendedError) Is(target error) bool { return target == ErrContended }

// storeError is a store's failure: it matches ErrStore.
type storeError struct {
	op  string
	err error
}

func (e *storeError) Error() string        { return "throttle: store " + e.op + ": " + e.err.Error() }
func (e *storeError) Unwrap() error        { return e.err }
func (e *storeError) Is(target error) bool { return target == ErrStore }

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{store.ErrInvalid}, args...)...)
}
