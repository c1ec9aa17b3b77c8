package throttle

import (
	"math/rand/v2"
	"time"
)

// Backoff returns the pause before retry number attempt (from 1) of a
// waiting acquisition. It is called concurrently. Any function will do, but
// give it jitter: waiters that retry in lock step keep colliding.
type Backoff func(attempt int) time.Duration

// exponentialJitter returns "full jitter" backoff, the default: a uniformly
// random pause up to min(max, base*2^(attempt-1)), which spreads waiters best.
func exponentialJitter(base, max time.Duration) Backoff {
	return func(attempt int) time.Duration {
		ceil := base
		for i := 1; i < attempt && ceil < max; i++ {
			ceil *= 2
		}
		if ceil > max || ceil <= 0 {
			ceil = max
		}
		if ceil <= 0 {
			return 0
		}
		return rand.N(ceil) + 1
	}
}
