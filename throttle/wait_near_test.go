package throttle_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// lateInvalidation is a store with a near cache whose invalidations never
// come (as if Redis's were slower than the release's message): it keeps
// refusing the keys in stale until told to Forget them.
type lateInvalidation struct {
	*memstore.Store
	mu    sync.Mutex
	stale map[string]bool
}

var _ storekit.Near = (*lateInvalidation)(nil)

func (s *lateInvalidation) Refused(req store.Request) (store.Grant, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return store.Grant{Remaining: time.Minute}, s.stale[req.Key]
}

func (s *lateInvalidation) Spent(string, store.Rate, int) (store.Decision, bool) {
	return store.Decision{}, false
}

func (s *lateInvalidation) Forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.stale, key)
}

// TestWaitAfterReleaseAsksTheStore: a waiter woken by a key's release asks
// the store, not the process's remembered refusal, which Redis may not have
// invalidated yet (the release's message and the invalidation come on two
// connections). Seen on a Cluster: a waiter whose backoff outlasts its Wait
// got the key only when its Wait ran out, 10 s after the release.
func TestWaitAfterReleaseAsksTheStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &lateInvalidation{Store: memstore.New(), stale: map[string]bool{}}
		holders := throttle.LockConfig{Name: "near-wait", Mode: throttle.Exclusive, TTL: time.Minute}
		waiters := holders
		waiters.Wait = 5 * time.Second
		waiters.Backoff = func(int) time.Duration { return time.Hour } // only a release wakes the waiter
		hl, wl := newLock(t, st, holders), newLock(t, st, waiters)
		ctx := context.Background()
		held, err := hl.Acquire(ctx, "u")
		require.NoError(t, err)
		require.NotNil(t, held)
		st.stale[wl.StoredKey("u")] = true // this process remembers the holder's refusal

		var lease *throttle.Lease
		done := make(chan struct{})
		go func() {
			defer close(done)
			lease, err = wl.Acquire(ctx, "u")
		}()
		synctest.Wait() // the waiter waits for the release
		start := time.Now()
		require.NoError(t, held.Release(ctx))
		<-done
		require.NoError(t, err, "a waiter woken by the release was refused by a refusal Redis had not yet invalidated")
		require.NotNil(t, lease)
		require.Zero(t, time.Since(start), "the waiter got the key when its Wait ran out, not at the release")
		require.NoError(t, lease.Release(ctx))
	})
}
