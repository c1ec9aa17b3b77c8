package redisalgo

import (
	"context"
	"slices"
	"strings"
)

// checkEviction warns once, in the background, unless every master's
// maxmemory-policy is noeviction: any other may drop a lock.
func (s *Store) checkEviction() {
	w := &s.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.spawn(func(ctx context.Context) {
		defer close(w.checked)
		ctx, cancel := context.WithTimeout(ctx, w.timeout)
		defer cancel()
		found, err := s.conn.Policies(ctx)
		if err != nil {
			s.cfg.log.Debug(s.name+": cannot check maxmemory-policy", "err", err)
		}
		if found = slices.DeleteFunc(found, func(p string) bool { return strings.HasSuffix(p, "noeviction") }); len(found) > 0 {
			slices.Sort(found)
			s.cfg.log.Warn(s.name+": Redis may evict keys when memory runs short, and an evicted lock is "+
				"silently lost (a duplicate gets through): set maxmemory-policy noeviction",
				"maxmemory-policy", strings.Join(found, ","))
		}
	}) {
		close(w.checked)
	}
}

// Checked returns a channel closed once the start-up check is over (tests).
func Checked(s *Store) <-chan struct{} { return s.watch.checked }
