package throttle

import "time"

// SetClock makes the monitor of k's store read now and wait for its ticks on
// after, so that the tests of the liveness rule run on a clock of their own.
// Set it before k's first call.
func SetClock(k *Lock, now func() time.Duration, after func(time.Duration) <-chan time.Time) {
	k.l.live.clock = clock{now: func() int64 { return int64(now()) }, after: after}
}

// BusyQuiets is how many Timeouts of silence make an outage before the
// store's first answer.
const BusyQuiets = busyQuiets
