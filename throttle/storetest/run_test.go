package storetest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
	"github.com/go-throttle/throttle/throttle/storetest"
)

func TestRunMemstore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return memstore.New() })
}

// refusing is a memstore that refuses fenced and reentrant requests, as a
// quorum store does, and says so with Refuses.
type refusing struct{ *memstore.Store }

func (r refusing) Refuses(req store.Request) error {
	if req.Fence || req.Reentrant {
		return fmt.Errorf("%w: no fences, no re-entry", store.ErrInvalid)
	}
	return nil
}

func (r refusing) Acquire(ctx context.Context, req store.Request) (store.Grant, error) {
	if err := r.Refuses(req); err != nil {
		return store.Grant{}, err
	}
	return r.Store.Acquire(ctx, req)
}

// TestRunRefusingStore: the suite skips what a store refuses and checks
// the refusal.
func TestRunRefusingStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return refusing{memstore.New()} })
}
