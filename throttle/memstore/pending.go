package memstore

import (
	"context"
	"errors"

	"github.com/go-throttle/throttle/throttle/store"
)

// TODO(issue 29): being written on branch stores.

// AllowAll is not written yet.
func (s *Store) AllowAll(ctx context.Context, limits []store.Limit, cost int) ([]store.Decision, error) {
	return nil, errors.New("memstore: AllowAll: not yet")
}

// Delete is not written yet.
func (s *Store) Delete(ctx context.Context, keys ...string) error {
	return errors.New("memstore: Delete: not yet")
}
