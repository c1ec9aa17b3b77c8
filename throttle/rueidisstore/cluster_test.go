package rueidisstore_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/rueidisstore"
	"github.com/go-throttle/throttle/throttle/store"
	"github.com/go-throttle/throttle/throttle/storetest"
)

// TestCluster runs the store on a real three-master Redis Cluster through a
// rueidis cluster client: the conformance suite (fence and record keys
// share their lock's slot through the hash tag), a release waking a waiter
// whose subscription may sit on another node, and a slot migrated while
// requests run, which rueidis follows (MOVED, ASK) without a wrong answer.
func TestCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: cl.Addrs, DisableCache: true})
	require.NoError(t, err)
	t.Cleanup(client.Close)
	newStore := func(t *testing.T) *redisstore.Store {
		s := rueidisstore.New(client)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}

	t.Run("conformance", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store { return newStore(t) })
	})

	t.Run("migration-under-load", func(t *testing.T) {
		s := newStore(t)
		l, err := throttle.NewLock(s, throttle.LockConfig{Name: "migrate", TTL: time.Minute})
		require.NoError(t, err)
		// Ids whose keys share one slot: the hash tag is policy:id, so
		// find one id and reuse its slot by migrating it while a loop of
		// distinct-key admissions on it and its duplicates run.
		id := "user-1"
		k := storekit.Key("throttle", "migrate", id)
		slot := redistest.KeySlot(k)
		from := cl.Owner(t, slot)
		to := cl.Masters[0]
		if to == from {
			to = cl.Masters[1]
		}
		ctx := context.Background()
		_, err = l.Admit(ctx, id)
		require.NoError(t, err, "first Admit")
		var admitted, errs atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					_, err := l.Admit(ctx, id) // always a duplicate
					switch {
					case err == nil:
						admitted.Add(1)
					case !isContended(err):
						errs.Add(1)
					}
				}
			})
		}
		time.Sleep(50 * time.Millisecond)
		cl.MigrateSlot(t, slot, from, to)
		time.Sleep(50 * time.Millisecond)
		close(stop)
		wg.Wait()
		require.EqualValues(t, 0, admitted.Load(), "%d duplicates admitted while the key's slot moved", admitted.Load())
		if errs.Load() != 0 {
			t.Logf("%d store errors during the migration (allowed: a request may meet the move)", errs.Load())
		}
		require.Same(t, to, cl.Owner(t, slot), "slot %d's owner after the migration, want %s", slot, to.Addr)
		_, err = l.Admit(ctx, id)
		var ce *throttle.ContendedError
		require.ErrorAs(t, err, &ce, "the duplicate after the migration")
	})
}

func isContended(err error) bool {
	var ce *throttle.ContendedError
	return errors.As(err, &ce)
}
