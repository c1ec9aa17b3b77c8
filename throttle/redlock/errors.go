package redlock

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-throttle/throttle/throttle/store"
)

// ErrLate is the cause of an Acquire or Extend whose quorum answered too
// late to be of use: the time the nodes took, plus the drift allowance
// (store.Drift), reached the TTL, so some node may already have let the key
// go. An acquisition that fails so has been released on every node.
var ErrLate = errors.New("redlock: the quorum answered after the lock's validity ran out")

// QuorumError is the error of a call that too few nodes answered to decide
// it: an Acquire for which neither a quorum of grants nor a quorum of
// answers came, a Release or Extend whose outcome depends on the nodes that
// failed. Errs holds each node's error, in the order of the clients given
// to New, and nil for the nodes that answered.
//
// It matches store.ErrNotApplied only when the call surely changed nothing:
// no node granted (or, for Release and Extend, answered) anything and every
// node that failed refused the connection or was closed (redisstore marks
// those errors so), so that the throttle.Limiter does not queue a release of
// a lock that was never taken. It matches the caller's context
// error when the caller's context ended first.
type QuorumError struct {
	// Op is "acquire", "release" or "extend".
	Op string
	// Quorum is the number of nodes a decision needs.
	Quorum int
	// Answered is how many nodes answered.
	Answered int
	// Errs is each node's error, nil where the node answered.
	Errs []error

	notApplied bool
	cause      error // the caller's context error, when it ended
}

// Error says how many nodes answered and why the others did not.
func (e *QuorumError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "redlock: %s: %d of %d nodes answered, the decision needs %d",
		e.Op, e.Answered, len(e.Errs), e.Quorum)
	if e.cause != nil {
		fmt.Fprintf(&b, " (%v)", e.cause)
	}
	sep := ": "
	for _, err := range e.Errs {
		if err != nil {
			b.WriteString(sep)
			b.WriteString(err.Error())
			sep = "; "
		}
	}
	return b.String()
}

// Unwrap returns store.ErrNotApplied when the call surely changed nothing
// and the caller's context error when it ended, so that errors.Is sees
// them; the nodes' own errors are in Errs.
func (e *QuorumError) Unwrap() []error {
	var errs []error
	if e.notApplied {
		errs = append(errs, store.ErrNotApplied)
	}
	if e.cause != nil {
		errs = append(errs, e.cause)
	}
	return errs
}

// notApplied returns the error of a call that was not sent because ctx had
// already ended.
func notApplied(op string, err error) error {
	return fmt.Errorf("redlock: %s: %w: %w", op, store.ErrNotApplied, err)
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: redlock: "+format, append([]any{store.ErrInvalid}, args...)...)
}
