package throttle

import (
	"math/rand/v2"
	"time"
)

// Backoff returns the pause before retry number attempt (from 1) of a
// waiting acquisition. It is called concurrently. Jitter matters: waiters
// that retry in lock step keep colliding.
type Backoff func(attempt int) time.Duration

// ExponentialJitter returns "full jitter" backoff, the default: a uniformly
// random pause up to min(max, base*2^(attempt-1)). It spreads waiters best
// and loads the store least when many contend.
func ExponentialJitter(base, max time.Duration) Backoff {
	return func(attempt int) time.Duration {
		ceil := exponential(base, max, attempt)
		if ceil <= 0 {
			return 0
		}
		return rand.N(ceil) + 1
	}
}

// Fixed returns a pause of d plus up to d/4 of random jitter for every retry.
func Fixed(d time.Duration) Backoff {
	return func(int) time.Duration { return d + jitter(d/4) }
}

// Linear returns a pause of step*attempt, capped at max, plus up to a quarter
// step of random jitter.
func Linear(step, max time.Duration) Backoff {
	return func(attempt int) time.Duration {
		d := step * time.Duration(max64(attempt, 1))
		if d > max || d <= 0 {
			d = max
		}
		return d + jitter(step/4)
	}
}

func exponential(base, max time.Duration, attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	d := base
	for i := 1; i < attempt && d < max; i++ {
		d *= 2
	}
	if d > max || d <= 0 {
		d = max
	}
	return d
}

func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return rand.N(d)
}

func max64(a, b int) int {
	if a > b {
		return a
	}
	return b
}
