package storekit

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
)

// Liveness is what a store outside this process keeps for the watch of its
// calls (throttle's monitor), so that every limiter on the store shares one,
// and how its client reports a connection it could not make: a refused
// connection is an answer that the store is down, not silence.
type Liveness struct {
	once    sync.Once
	monitor any
	refused atomic.Pointer[func(error)]
}

// Monitor returns the monitor that mk made on the first call.
func (l *Liveness) Monitor(mk func() any) any {
	l.once.Do(func() { l.monitor = mk() })
	return l.monitor
}

// OnRefused sets the function that Refused calls.
func (l *Liveness) OnRefused(f func(error)) { l.refused.Store(&f) }

// Refused reports that the client could not connect to the store (err:
// refused, reset, no such host).
func (l *Liveness) Refused(err error) {
	if f := l.refused.Load(); f != nil {
		(*f)(err)
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
