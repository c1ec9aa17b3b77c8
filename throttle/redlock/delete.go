package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Delete removes keys on every node whoever holds them (see store.Store),
// asking the nodes at once and waiting for all; it returns the nodes'
// errors, joined, when any failed.
func (s *Store) Delete(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	errs := make([]error, len(s.nodes))
	var wg sync.WaitGroup
	for i, node := range s.nodes {
		wg.Go(func() {
			if err := node.Delete(ctx, keys...); err != nil {
				errs[i] = fmt.Errorf("redlock: delete: node %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
