package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// testTokenSafety is the failure of seed 000: a holder whose lease ran out
// must not free or extend the lock its successor holds now.
func testTokenSafety(t *testing.T, s store.Store) {
	ctx := context.Background()
	key := newKey("token-safety")
	a := store.NewToken()
	mustAcquire(t, s, store.Request{Key: key, Token: a, TTL: 50 * time.Millisecond})
	b := waitFree(t, s, key, longTTL)

	mustOutcome(t, "Release by the expired holder A", store.HeldByOther)(s.Release(ctx, key, a))
	mustOutcome(t, "Extend by the expired holder A", store.HeldByOther)(s.Extend(ctx, key, a, longTTL))
	mustBeHeld(t, s, key)
	mustOutcome(t, "Release by the holder B", store.OK)(s.Release(ctx, key, b))
}

// contenders is the number of goroutines that race for one key.
const contenders = 200

func testContention(t *testing.T, s store.Store) {
	key := newKey("contention")
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners []string
		errs    []error
	)
	start := make(chan struct{})
	for range contenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok := store.NewToken()
			<-start
			g, err := s.Acquire(context.Background(), store.Request{Key: key, Token: tok, TTL: longTTL})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				errs = append(errs, err)
			case g.Acquired:
				winners = append(winners, tok)
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d of %d Acquire calls failed, first: %v", len(errs), contenders, errs[0])
	}
	if len(winners) != 1 {
		t.Fatalf("%d contenders won one key, want exactly 1", len(winners))
	}
	mustOutcome(t, "Release by the winner", store.OK)(s.Release(context.Background(), key, winners[0]))
}

func testFence(t *testing.T, s store.Store) {
	t.Run("sequential", func(t *testing.T) {
		ctx := context.Background()
		key := newKey("fence-sequential")
		var last int64
		for i := range 20 {
			tok := store.NewToken()
			g := mustAcquire(t, s, store.Request{Key: key, Token: tok, TTL: longTTL, Fence: true})
			if g.Fence <= last {
				t.Fatalf("cycle %d: fence %d after %d, want strictly increasing and positive", i, g.Fence, last)
			}
			last = g.Fence
			mustOutcome(t, "Release", store.OK)(s.Release(ctx, key, tok))
		}
	})
	t.Run("concurrent", func(t *testing.T) {
		// Winners record their fence while they hold the key, so the
		// recorded order is the order of the holds and must be strictly
		// increasing, which also makes every fence unique.
		key := newKey("fence-concurrent")
		const workers, tries = 20, 10
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			fences []int64
			errs   []error
		)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx := context.Background()
				for range tries {
					tok := store.NewToken()
					g, err := s.Acquire(ctx, store.Request{Key: key, Token: tok, TTL: longTTL, Fence: true})
					if err == nil && g.Acquired {
						mu.Lock()
						fences = append(fences, g.Fence)
						mu.Unlock()
						var out store.Outcome
						out, err = s.Release(ctx, key, tok)
						if err == nil && out != store.OK {
							t.Errorf("Release by a fenced winner = %v, want ok", out)
						}
					}
					if err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
						return
					}
				}
			}()
		}
		wg.Wait()
		if len(errs) > 0 {
			t.Fatalf("%d store calls failed, first: %v", len(errs), errs[0])
		}
		if len(fences) == 0 {
			t.Fatal("no contender ever acquired the key")
		}
		for i := 1; i < len(fences); i++ {
			if fences[i] <= fences[i-1] {
				t.Fatalf("hold %d got fence %d after %d: fences must strictly increase", i, fences[i], fences[i-1])
			}
		}
	})
}
