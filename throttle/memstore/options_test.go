package memstore

import "time"

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
