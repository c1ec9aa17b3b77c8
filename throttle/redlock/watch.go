package redlock

import (
	"context"
	"errors"
	"sync"
)

// Watch returns a channel that receives a value after key is released on
// any node (the holder releases on every node, so the first one wakes the
// waiter), and the stop function the caller must call when it no longer
// waits. It subscribes on every node in parallel (see
// redisstore.Store.Watch; each bounded by ctx and the node's watch timeout)
// and fails only when no node could be watched; the throttle.Limiter then
// polls. A wake-up is a hint, not a grant: the release of a contender's
// partial lock wakes the waiter too, which then simply tries again.
func (s *Store) Watch(ctx context.Context, key string) (<-chan struct{}, func(), error) {
	if key == "" {
		return nil, nil, invalid("empty key")
	}
	type watch struct {
		ch   <-chan struct{}
		stop func()
	}
	watches := make([]watch, len(s.nodes))
	errs := make([]error, len(s.nodes))
	var wg sync.WaitGroup
	for i, node := range s.nodes {
		wg.Go(func() {
			ch, stop, err := node.Watch(ctx, key)
			if err != nil {
				errs[i] = s.nodeErr(i, err)
				return
			}
			watches[i] = watch{ch, stop}
		})
	}
	wg.Wait()

	wake := make(chan struct{}, 1)
	quit := make(chan struct{})
	var fwd sync.WaitGroup
	var stops []func()
	for _, w := range watches {
		if w.ch == nil {
			continue
		}
		stops = append(stops, w.stop)
		fwd.Go(func() {
			for {
				select {
				case <-quit:
					return
				case _, ok := <-w.ch:
					if !ok {
						return
					}
					select {
					case wake <- struct{}{}:
					default: // a signal is pending already
					}
				}
			}
		})
	}
	if len(stops) == 0 {
		return nil, nil, errors.Join(append([]error{errNoWatch}, errs...)...)
	}
	stop := sync.OnceFunc(func() {
		close(quit)
		fwd.Wait()
		for _, st := range stops {
			st()
		}
	})
	return wake, stop, nil
}

var errNoWatch = errors.New("redlock: watch: no node could be watched")
