package redislua

import "sync/atomic"

// Share is an exponentially weighted moving average of how many calls had
// some outcome (1) rather than not (0), weighing each new one 1/16, in
// units of 1/65536. The Redis stores use it to pick the cheaper of two
// paths that are both correct whatever it says: a plain acquisition's (how
// often the key is held) and a quota charge's (how often the key exists).
// Updates are a Load and a Store, not a compare-and-swap: two concurrent
// ones may lose one sample, which an estimate can afford, and a share that
// stays at 0 (every call without the outcome) stops being written at all,
// so that its cache line is shared, not bounced between cores.
type Share struct{ v atomic.Int32 }

const (
	shareOne   = 1 << 16 // the share of calls that all had the outcome
	shareShift = 4       // each sample weighs 1/16

	// shareFrequent is where Frequent turns true: one call in eight. In
	// units of one plain command, a path that pays a second round trip
	// for the outcome costs 1 + share, one that always pays about 1.14
	// (a pipeline) or 1.1–1.25 (a script) costs that, so the second wins
	// from about one call in seven or eight; a mix near that share costs
	// about the same on either path, so flipping between them loses
	// nothing.
	shareFrequent = shareOne / 8
)

// Observe adds one call, with the outcome or not.
func (s *Share) Observe(outcome bool) {
	var sample int32
	if outcome {
		sample = shareOne
	}
	old := s.v.Load()
	// The arithmetic shift rounds down, so the average reaches 0 after a
	// run of calls without the outcome, and then stays there without
	// being written.
	if v := old + (sample-old)>>shareShift; v != old {
		s.v.Store(v)
	}
}

// Frequent reports whether at least about one call in eight had the
// outcome lately.
func (s *Share) Frequent() bool { return s.v.Load() >= shareFrequent }
