package redisalgo

import "sync/atomic"

// Share is a moving average, in units of 1/65536, of how many calls had some
// outcome, each new call weighing 1/16: the store picks by it the cheaper of
// two ways to one answer. Two updates at once may lose a sample.
type Share struct{ v atomic.Int32 }

// shareFrequent is one call in eight: from about there, paying a pipeline or
// a script every time beats paying a second round trip for the outcome.
const shareOne, shareFrequent = 1 << 16, 1 << 13

// Observe adds one call, with the outcome or not.
func (s *Share) Observe(outcome bool) {
	var sample int32
	if outcome {
		sample = shareOne
	}
	old := s.v.Load()
	s.v.Store(old + (sample-old)>>4) // rounds down, to exactly 0 after a run without
}

// Frequent reports whether one call in eight or more had the outcome lately.
func (s *Share) Frequent() bool { return s.v.Load() >= shareFrequent }
