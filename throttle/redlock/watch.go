package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/go-throttle/throttle/throttle/store"
)

// Watch returns a channel told when key is released on any node, and the
// stop function to call when done. It fails only when no node could be
// watched. A wake-up is a hint: a contender's partial lock wakes it too.
func (s *Store) Watch(ctx context.Context, key string) (<-chan struct{}, func(), error) {
	if key == "" {
		return nil, nil, invalid("empty key")
	}
	wake, quit := make(chan struct{}, 1), make(chan struct{})
	stops, errs := make([]func(), len(s.nodes)), make([]error, len(s.nodes))
	var subs, fwd sync.WaitGroup
	for i, node := range s.nodes {
		subs.Go(func() {
			var ch <-chan struct{}
			errs[i] = errors.New("not a store.Notifier")
			if n, ok := node.(store.Notifier); ok {
				ch, stops[i], errs[i] = n.Watch(ctx, key)
			}
			if errs[i] == nil {
				fwd.Go(func() { forward(ch, wake, quit) })
			}
		})
	}
	subs.Wait()
	if !slices.Contains(errs, nil) {
		return nil, nil, fmt.Errorf("redlock: watch: no node could be watched: %w", errors.Join(errs...))
	}
	return wake, sync.OnceFunc(func() {
		close(quit)
		fwd.Wait()
		for i, stop := range stops {
			if errs[i] == nil {
				stop()
			}
		}
	}), nil
}

// forward passes one node's signals on to wake, dropping those that find
// one pending, until ch or quit closes.
func forward(ch <-chan struct{}, wake chan<- struct{}, quit <-chan struct{}) {
	for {
		select {
		case <-quit:
			return
		case _, ok := <-ch:
			if !ok {
				return
			}
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}
}
