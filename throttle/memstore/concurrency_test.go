package memstore

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

// TestMutualExclusion hammers a few keys from many goroutines with every
// operation and checks that no key ever has two holders at once.
func TestMutualExclusion(t *testing.T) {
	s := New()
	const keys, workers, rounds = 4, 32, 300
	var holders [keys]atomic.Int32
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				k := (w + r) % keys
				key := "k" + strconv.Itoa(k)
				tok := storekit.NewToken()
				req := store.Request{Key: key, Token: tok, TTL: time.Minute, Fence: r%2 == 0, Reentrant: r%3 == 0}
				g, err := s.Acquire(bg, req)
				if !assert.NoError(t, err) {
					return
				}
				if !g.Acquired {
					continue
				}
				assert.Equal(t, int32(1), holders[k].Add(1), "holders of %s", key)
				out, err := s.Extend(bg, key, tok, time.Minute)
				assert.NoError(t, err)
				assert.Equal(t, store.OK, out, "Extend by the holder")
				holders[k].Add(-1)
				out, err = s.Release(bg, key, tok)
				assert.NoError(t, err)
				assert.Equal(t, store.OK, out, "Release by the holder")
			}
		})
	}
	wg.Wait()
	locks, _, _ := s.counts()
	require.Zero(t, locks, "locks left after every holder released")
}
