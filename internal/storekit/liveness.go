package storekit

import (
	"errors"
	"net"
	"sync"
	"syscall"
)

// Monitor is what package throttle knows of a store's answers (its
// monitor), shared by every limiter on the store; the store's client tells
// it of the connections it could not make.
type Monitor interface {
	// Refused records that the client could not connect to the store.
	Refused(err error)
}

// Liveness is what a store outside this process keeps for the watch of its
// calls: its Monitor, so that every limiter on the store shares one, to
// which its client reports a connection it could not make (a refused
// connection is an answer that the store is down, not silence).
type Liveness struct {
	mu sync.Mutex
	m  Monitor
}

// Monitor returns the store's monitor, which mk made on the first call.
func (l *Liveness) Monitor(mk func() Monitor) Monitor {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = mk()
	}
	return l.m
}

// Replace makes m the store's monitor from now on (a test's, on a clock of
// its own).
func (l *Liveness) Replace(m Monitor) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.m = m
}

// Refused reports that the client could not connect to the store (err:
// refused, reset, no such host) to its monitor, if it has one yet.
func (l *Liveness) Refused(err error) {
	l.mu.Lock()
	m := l.m
	l.mu.Unlock()
	if m != nil {
		m.Refused(err)
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
