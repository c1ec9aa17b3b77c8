package memstore

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				k := (w + r) % keys
				key := "k" + strconv.Itoa(k)
				tok := store.NewToken()
				req := store.Request{Key: key, Token: tok, TTL: time.Minute, Fence: r%2 == 0, Reentrant: r%3 == 0}
				g, err := s.Acquire(bg, req)
				if err != nil {
					t.Error(err)
					return
				}
				if !g.Acquired {
					continue
				}
				if n := holders[k].Add(1); n != 1 {
					t.Errorf("key %s has %d holders", key, n)
				}
				if out, _ := s.Extend(bg, key, tok, time.Minute); out != store.OK {
					t.Errorf("Extend by the holder = %v", out)
				}
				holders[k].Add(-1)
				if out, _ := s.Release(bg, key, tok); out != store.OK {
					t.Errorf("Release by the holder = %v", out)
				}
			}
		}()
	}
	wg.Wait()
	if locks, _, _ := s.counts(); locks != 0 {
		t.Fatalf("%d locks left after every holder released", locks)
	}
}
