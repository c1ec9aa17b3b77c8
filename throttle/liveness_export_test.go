package throttle

import (
	"time"

	"github.com/go-throttle/throttle/internal/storekit"
)

// SetClock gives k a monitor of its own that reads now and waits for its
// ticks on after, so that the tests of the liveness rule run on a clock of
// their own; the store's refusals go to it. It does not read the run
// queue: only a tick that comes late counts the process starved. Set it before k's first call.
func SetClock(k *Lock, now func() time.Duration, after func(time.Duration) <-chan time.Time) {
	m := newMonitor(clock{now: func() int64 { return int64(now()) }, after: after})
	k.l.live = m
	if lv, ok := k.l.store.(interface{ Liveness() *storekit.Liveness }); ok {
		lv.Liveness().Replace(m)
	}
}

// BusyQuiets is how many Timeouts of silence make an outage before the
// store's first answer.
const BusyQuiets = busyQuiets
