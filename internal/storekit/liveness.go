package storekit

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
)

// Monitor is what package throttle knows of a store's answers (its
// monitor), shared by every limiter on the store; the store's client tells
// it of the connections it could not make, and a store whose one call is
// many (Redlock's node calls) of the answers it gets along the way.
type Monitor interface {
	// Refused records that the client could not connect to the store.
	Refused(err error)
	// Answered records that the store answered something: a call still
	// in flight is not waiting on a silent store.
	Answered()
}

// Liveness is what a store outside this process keeps for the watch of its
// calls: its Monitor, so that every limiter on the store shares one, to
// which its client reports a connection it could not make (a refused
// connection is an answer that the store is down, not silence).
type Liveness struct {
	mu sync.Mutex // orders the first Monitor call's mk
	m  atomic.Pointer[Monitor]
}

// Monitor returns the store's monitor, which mk made on the first call.
func (l *Liveness) Monitor(mk func() Monitor) Monitor {
	if m := l.m.Load(); m != nil {
		return *m
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m.Load() == nil {
		m := mk()
		l.m.Store(&m)
	}
	return *l.m.Load()
}

// Replace makes m the store's monitor from now on (a test's, on a clock of
// its own).
func (l *Liveness) Replace(m Monitor) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.m.Store(&m)
}

// Refused reports that the client could not connect to the store (err:
// refused, reset, no such host) to its monitor, if it has one yet.
func (l *Liveness) Refused(err error) {
	if m := l.m.Load(); m != nil {
		(*m).Refused(err)
	}
}

// Answered reports an answer of the store to its monitor, if it has one
// yet: one load when it has none.
func (l *Liveness) Answered() {
	if m := l.m.Load(); m != nil {
		(*m).Answered()
	}
}

// Refusal reports whether err says that no connection to the store could be
// made, at once: refused, reset, no such host, a dial that failed (not one
// that timed out, which a process short of CPU also sees).
func Refusal(err error) bool {
	var ne net.Error
	if err == nil || errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	var de *net.DNSError
	var oe *net.OpError
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.As(err, &de) || errors.As(err, &oe) && oe.Op == "dial"
}
