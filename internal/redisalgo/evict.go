package redisalgo

import (
	"context"
	"slices"
	"strings"
)

// checkEviction asks Redis once, in the background, for the maxmemory-policy
// of every master and logs one warning unless all are noeviction: every
// other policy lets Redis drop keys with a time to live, as every lock has,
// when memory runs short, and an evicted lock is silently gone. It is quiet
// when Redis does not answer or forbids CONFIG, as managed services often do.
func (s *Store) checkEviction() {
	w := &s.watch
	started := w.background(func(ctx context.Context) {
		defer close(w.checked)
		ctx, cancel := context.WithTimeout(ctx, w.waitTimeout)
		defer cancel()
		found, err := s.conn.Policies(ctx)
		if err != nil {
			s.cfg.logger().Debug(s.name+": cannot check maxmemory-policy", "err", err)
		}
		var addrs, policies []string
		for addr, p := range found {
			if strings.EqualFold(p, "noeviction") {
				continue
			}
			if addr != "" {
				addrs = append(addrs, addr)
			}
			if !slices.Contains(policies, p) {
				policies = append(policies, p)
			}
		}
		if len(policies) == 0 {
			return
		}
		slices.Sort(addrs)
		slices.Sort(policies)
		attrs := []any{"maxmemory-policy", strings.Join(policies, ",")}
		if len(addrs) > 0 {
			attrs = append(attrs, "nodes", addrs)
		}
		s.cfg.logger().Warn(s.name+": Redis may evict keys when memory runs short, and an evicted lock is "+
			"silently lost (a duplicate gets through): set maxmemory-policy noeviction", attrs...)
	})
	if !started {
		close(w.checked)
	}
}

// Checked returns a channel closed once the start-up check is over (tests).
func Checked(s *Store) <-chan struct{} { return s.watch.checked }
