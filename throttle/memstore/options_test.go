package memstore

import "time"

// withPolicyShare sets the part, in (0, 1], of each shard's bounds that one
// policy may use (1: a test fills a store with one policy; 0.5 by default).
func withPolicyShare(share float64) Option {
	return func(c *config) {
		if share > 0 {
			c.policyShare = min(share, 1)
		}
	}
}

// withFenceTTL sets how long a fence counter is kept after its key's last
// fenced acquisition (24 hours by default), at least a second, as
// redisstore.WithFenceTTL.
func withFenceTTL(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.fenceTTL = max(d, time.Second)
		}
	}
}
