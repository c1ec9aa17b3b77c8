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
	// error). The error returned wraps the store's own error, which
	// errors.Unwrap gives (context.DeadlineExceeded when the store call
	// ran past Policy.Timeout).
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

// storeError is returned when the store failed: it matches ErrStore, and
// errors.Unwrap gives the store's own error.
type storeError struct {
	op  string // "acquire", "release" or "extend"
	err error
}

func (e *storeError) Error() string        { return "throttle: store " + e.op + ": " + e.err.Error() }
func (e *storeError) Unwrap() error        { return e.err }
func (e *storeError) Is(target error) bool { return target == ErrStore }

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}
