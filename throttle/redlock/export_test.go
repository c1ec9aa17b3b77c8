package redlock

// ErrNoQuorum is matched by the error of a call that no quorum decided in
// time (for the tests in package redlock_test).
var ErrNoQuorum = errNoQuorum
