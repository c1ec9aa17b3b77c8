package redlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle/redlock"
	"github.com/go-throttle/throttle/throttle/store"
)

// TestOneWinner races contenders for one key, on one Store shared by
// goroutines and on two Stores with clients of their own (two processes'
// worth of connections): exactly one wins each round, the winner holds a
// quorum of nodes, and the losers leave no lock behind. (The node timeout
// is raised for the reason TestConformance gives.)
func TestOneWinner(t *testing.T) {
	ns := startNodes(t, 3, false)
	a, b := ns.store(t, redlock.WithNodeTimeout(time.Second)), ns.store(t, redlock.WithNodeTimeout(time.Second))
	cases := map[string][]*redlock.Store{
		"goroutines":  {a},
		"two-stores":  {a, b},
		"five-stores": {a, b, a, b, a},
	}
	for name, stores := range cases {
		t.Run(name, func(t *testing.T) {
			for round := range 10 {
				key := newKey(t)
				winners, losers := race(t, stores, key, 30)
				if len(winners) != 1 {
					t.Fatalf("round %d: %d winners, want exactly 1", round, len(winners))
				}
				if n := ns.holding(t, key, winners[0]); n < a.Quorum() {
					t.Fatalf("round %d: the winner holds %d nodes, want a quorum", round, n)
				}
				for _, tok := range losers {
					ns.eventuallyFree(t, key, tok)
				}
				mustOutcome(t, "Release by the winner", store.OK)(a.Release(context.Background(), key, winners[0]))
			}
		})
	}
}

// race starts perStore contenders on each store at once and returns the
// tokens that won and lost.
func race(t *testing.T, stores []*redlock.Store, key string, perStore int) (winners, losers []string) {
	t.Helper()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		start = make(chan struct{})
	)
	for _, s := range stores {
		for range perStore {
			wg.Go(func() {
				tok := store.NewToken()
				<-start
				g, err := s.Acquire(context.Background(), store.Request{Key: key, Token: tok, TTL: time.Minute})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					t.Errorf("Acquire: %v", err)
				case g.Acquired:
					winners = append(winners, tok)
				default:
					losers = append(losers, tok)
				}
			})
		}
	}
	close(start)
	wg.Wait()
	return winners, losers
}

// TestSplitVote: a split vote (each contender holds one of three nodes)
// that does not resolve is refused, and the contender's own part is
// released whether it kept it for its retries (it holds the lowest node)
// or gave it up at once, while the other contenders' parts stay.
func TestSplitVote(t *testing.T) {
	ns := startNodes(t, 3, false)
	s := ns.store(t)
	for name, me := range map[string]int{"keeper": 0, "releaser": 1} {
		t.Run(name, func(t *testing.T) {
			key := newKey(t)
			tokens := []string{store.NewToken(), store.NewToken(), store.NewToken()}
			for i, tok := range tokens {
				ns.hold(t, key, tok, time.Minute, i)
			}
			mustRefuse(t, s, store.Request{Key: key, Token: tokens[me], TTL: time.Minute})
			ns.eventuallyFree(t, key, tokens[me])
			for i, tok := range tokens {
				if i != me && ns.holder(t, i, key) != tok {
					t.Fatalf("node %d lost the other contender's part", i)
				}
			}
		})
	}
}
