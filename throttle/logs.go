package throttle

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"
)

// logGate keeps one kind of log line to at most one a second, and counts
// the lines it held back, which the next line it lets through reports: an
// outage does not flood the log, and no kind of event hides another.
type logGate struct {
	last       atomic.Int64 // monoNow of the last line let through
	suppressed atomic.Int64 // lines held back since
}

// pass reports whether a line may be written now, and how many were held
// back.
func (g *logGate) pass() (bool, int64) {
	now := monoNow()
	prev := g.last.Load()
	if (prev != 0 && now-prev < int64(time.Second)) || !g.last.CompareAndSwap(prev, now) {
		g.suppressed.Add(1)
		return false, 0
	}
	return true, g.suppressed.Swap(0)
}

// logLimited writes a line of kind at level through the kind's logGate.
func (l *limiter) logLimited(level slog.Level, kind, msg string, args ...any) {
	g, ok := l.logs.Load(kind)
	if !ok {
		g, _ = l.logs.LoadOrStore(kind, new(logGate))
	}
	ok, held := g.(*logGate).pass()
	if !ok {
		return
	}
	args = append(args, "policy", l.p.Name)
	if held > 0 {
		args = append(args, "suppressed", held)
	}
	l.p.logger().Log(context.Background(), level, msg, args...)
}

// logStoreError logs a store error of op, at most once a second per op.
func (l *limiter) logStoreError(op string, err error) {
	l.logLimited(slog.LevelWarn, "store error "+op, "throttle: store error", "op", op,
		"when_store_fails", failModeNames[l.p.WhenStoreFails], "err", err)
}
