package redlock

import (
	"context"
	"errors"
)

// TODO(issue 29): being written on branch stores.

// Delete is not written yet.
func (s *Store) Delete(ctx context.Context, keys ...string) error {
	return errors.New("redlock: Delete: not yet")
}
