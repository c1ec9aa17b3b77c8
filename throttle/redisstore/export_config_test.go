package redisstore

// Hooks for the tests of the start-up configuration check.

// ConfigChecked returns a channel that is closed once the start-up check of
// maxmemory-policy is over (or was cancelled by Close), so that a test can
// look for its log line, or its absence, without sleeping.
func ConfigChecked(s *Store) <-chan struct{} { return s.watch.checked }
