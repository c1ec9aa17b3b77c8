package redisstore

import "time"

// Defaults of the options.
const (
	// DefaultFenceTTL is how long an idle fencing counter is kept. It is
	// refreshed by every fenced acquisition of its key, so only keys that
	// nobody fenced for a whole day disappear; see the package
	// documentation for why the counter still only increases.
	DefaultFenceTTL = 24 * time.Hour

	// DefaultWatchTimeout bounds how long Watch waits for Redis to confirm
	// a subscription before it reports an error (and the Limiter falls
	// back to polling).
	DefaultWatchTimeout = time.Second
)

// Option configures a Store.
type Option func(*Store)

// WithFenceTTL sets how long a fencing counter is kept after the last fenced
// acquisition of its key (default DefaultFenceTTL). A shorter TTL keeps fewer
// idle counters in Redis; the counter restarts from the server clock after it
// expired, so a TTL well above the longest lock TTL loses nothing. Values
// below one second are raised to one second.
func WithFenceTTL(d time.Duration) Option {
	return func(s *Store) {
		if d < time.Second {
			d = time.Second
		}
		s.fenceTTL = d
	}
}

// WithWatchTimeout bounds how long Watch waits for Redis to confirm a
// subscription (default DefaultWatchTimeout). Watch also returns when its
// context ends. Values that are not positive keep the default.
func WithWatchTimeout(d time.Duration) Option {
	return func(s *Store) {
		if d > 0 {
			s.watchTimeout = d
		}
	}
}
