package throttle

import (
	"errors"
	"fmt"
	"time"
)

// The sentinel errors callers branch on. Every error the Limiter and its
// leases return matches at most one of them with errors.Is, and context
// errors (context.Canceled, context.DeadlineExceeded) stay themselves.
var (
	// ErrContended means somebody else holds the key. The error returned
	// is a *ContendedError that also says how long they keep it.
	ErrContended = errors.New("throttle: key is held by another owner")

	// ErrStore means the store could not answer (Redis down, slow, script
	// error). The error returned is a *StoreError wrapping the cause.
	ErrStore = errors.New("throttle: store unavailable")

	// ErrLost means a lease was lost while it was held: its key expired or
	// was taken by someone else before the holder released it.
	ErrLost = errors.New("throttle: lease lost")

	// ErrNotHeld means a Release or Extend found that the lease no longer
	// holds its key (it expired, or another owner holds it now).
	ErrNotHeld = errors.New("throttle: lease not held")

	// ErrInvalid means a Policy, key or argument is not usable. The error
	// text says which and why.
	ErrInvalid = errors.New("throttle: invalid argument")
)

// ContendedError is returned when a key is held by someone else. It matches
// ErrContended with errors.Is.
type ContendedError struct {
	// RetryAfter is how long the current holder keeps the key, as reported
	// by the store: at least 1ms, or -1 when the key has no expiry.
	RetryAfter time.Duration
}

// Error says that the key is held and for how long.
func (e *ContendedError) Error() string {
	return fmt.Sprintf("throttle: key is held by another owner (retry after %v)", e.RetryAfter)
}

// Is reports whether target is ErrContended.
func (e *ContendedError) Is(target error) bool { return target == ErrContended }

// StoreError is returned when the store failed. It matches ErrStore with
// errors.Is, and errors.Unwrap gives the store's own error (which may itself
// be context.DeadlineExceeded when the store call timed out).
type StoreError struct {
	// Op is the store operation that failed: "acquire", "release" or "extend".
	Op string
	// Err is the store's error.
	Err error
}

// Error names the failed operation and the store's error.
func (e *StoreError) Error() string { return "throttle: store " + e.Op + ": " + e.Err.Error() }

// Unwrap returns the store's error.
func (e *StoreError) Unwrap() error { return e.Err }

// Is reports whether target is ErrStore.
func (e *StoreError) Is(target error) bool { return target == ErrStore }

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}
