package redlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/redlock"
	"github.com/go-throttle/throttle/throttle/store"
)

// TestOneWinner races contenders for one key, on one Store shared by
// goroutines and on two Stores with clients of their own (two processes'
// worth of connections). Safety is asserted every round: never more than
// one winner, the winner holds a quorum of nodes, and the losers leave no
// lock behind. Liveness is a rate, as Redlock promises it: a round in which
// every contender's split votes fail (possible when sixty start at once on
// a loaded machine) must leave the key free, so that the next caller wins
// at once, and most rounds must have their winner.
func TestOneWinner(t *testing.T) {
	ns := startNodes(t, 3, false)
	a, b := ns.store(t), ns.store(t)
	cases := map[string][]*redlock.Store{
		"goroutines":  {a},
		"two-stores":  {a, b},
		"five-stores": {a, b, a, b, a},
	}
	const rounds, maxEmpty = 10, 3
	for name, stores := range cases {
		t.Run(name, func(t *testing.T) {
			empty := 0
			for round := range rounds {
				key := newKey(t)
				winners, losers := race(t, stores, key, 30)
				require.LessOrEqual(t, len(winners), 1, "round %d: winners", round)
				for _, tok := range losers {
					ns.eventuallyFree(t, key, tok)
				}
				if len(winners) == 0 {
					// Nobody won: the key must be free everywhere.
					empty++
					tok := storekit.NewToken()
					mustAcquire(t, a, store.Request{Key: key, Token: tok, TTL: time.Minute})
					winners = []string{tok}
				}
				require.GreaterOrEqual(t, ns.holding(t, key, winners[0]), 2, "round %d: the winner holds a quorum", round)
				mustOutcome(t, "Release by the winner", store.OK)(a.Release(context.Background(), key, winners[0]))
			}
			require.LessOrEqual(t, empty, maxEmpty, "rounds without a winner of %d", rounds)
			if empty > 0 {
				t.Logf("%d of %d rounds had no winner (every split vote failed)", empty, rounds)
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
				tok := storekit.NewToken()
				<-start
				g, err := s.Acquire(context.Background(), store.Request{Key: key, Token: tok, TTL: time.Minute})
				mu.Lock()
				defer mu.Unlock()
				if !assert.NoError(t, err, "Acquire") {
					return
				}
				if g.Acquired {
					winners = append(winners, tok)
				} else {
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
			tokens := []string{storekit.NewToken(), storekit.NewToken(), storekit.NewToken()}
			for i, tok := range tokens {
				ns.hold(t, key, tok, time.Minute, i)
			}
			mustRefuse(t, s, store.Request{Key: key, Token: tokens[me], TTL: time.Minute})
			ns.eventuallyFree(t, key, tokens[me])
			for i, tok := range tokens {
				if i != me {
					require.Equal(t, tok, ns.holder(t, i, key), "node %d lost the other contender's part", i)
				}
			}
		})
	}
}
