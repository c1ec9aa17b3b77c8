package redlock_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/redlock"
	"github.com/go-throttle/throttle/throttle/store"
)

// TestExactlyOneWithMinorityDown is issue 35's double click on five nodes:
// all up, two killed (SIGKILL) or two stopped (SIGSTOP). For each of many
// keys, 20 duplicates race over two Stores (two processes), each call's
// context cancelled as soon as it returns, as the limiter does. Exactly one
// must be admitted, never none, and the winner must hold the key on at
// least three live nodes; nobody gets an error, since a quorum is alive.
func TestExactlyOneWithMinorityDown(t *testing.T) {
	const keys, racers, ttl = 30, 20, 10 * time.Second
	for _, fault := range []string{"none", "killed", "stopped"} {
		t.Run(fault, func(t *testing.T) {
			// Proxied: the clients' dials to a dead or stopped server end
			// with the test (the proxy takes them).
			ns := startNodes(t, 5, true)
			// A loaded test machine can make a node miss the default
			// timeout; this test counts admissions, not speed. (A split
			// vote is retried for a quarter of the TTL.)
			stores := []*redlock.Store{ns.store(t, redlock.WithNodeTimeout(time.Second)), ns.store(t, redlock.WithNodeTimeout(time.Second))}
			for _, s := range stores {
				warmUp(s, racers)
			}
			live := []int{0, 1, 2, 3, 4}
			if fault != "none" {
				live = live[:3]
				for _, srv := range ns.srvs[3:] {
					if fault == "killed" {
						srv.Kill(t)
					} else {
						srv.Pause(t)
						defer srv.Resume(t)
					}
				}
			}
			for k := range keys {
				key := newKey(t)
				var (
					wg      sync.WaitGroup
					mu      sync.Mutex
					winners []string
					start   = make(chan struct{})
				)
				for i := range racers {
					wg.Go(func() {
						r := req(key, ttl)
						ctx, cancel := context.WithCancel(context.Background())
						<-start
						time.Sleep(rand.N(3 * time.Millisecond)) // requests arrive spread out
						g, err := stores[i%2].Acquire(ctx, r)
						cancel()
						assert.NoError(t, err, "key %d: racer %d", k, i)
						if g.Acquired {
							mu.Lock()
							winners = append(winners, r.Token)
							mu.Unlock()
						}
					})
				}
				close(start)
				wg.Wait()
				require.Len(t, winners, 1, "key %d: admissions of %d duplicates", k, racers)
				held := 0
				for _, i := range live {
					if ns.holder(t, i, key) == winners[0] {
						held++
					}
				}
				require.GreaterOrEqual(t, held, 3, "key %d: live nodes that hold the winner's key", k)
			}
		})
	}
}

// warmUp makes n acquisitions at once on s, so that its clients have their
// connections before a test counts errors: a cold start's dials can take
// longer than a node timeout on a loaded machine.
func warmUp(s *redlock.Store, n int) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			_, _ = s.Acquire(context.Background(), store.Request{Key: storekit.NewToken(), Token: "warm-up", TTL: time.Second})
		})
	}
	wg.Wait()
}

// TestExtendReachesEveryNode extends a lock held on every node of 5 and 8
// and cancels the caller's context as soon as Extend returns, as the
// limiter does: every node's PTTL must still be extended, not only the
// quorum's that answered first.
func TestExtendReachesEveryNode(t *testing.T) {
	const ttl, longer, rounds = 10 * time.Second, time.Minute, 15
	for _, n := range []int{5, 8} {
		t.Run(fmt.Sprint(n, "-nodes"), func(t *testing.T) {
			ns := startNodes(t, n, false)
			s := ns.store(t)
			for round := range rounds {
				key := newKey(t)
				r := req(key, ttl)
				mustAcquire(t, s, r)
				ns.eventuallyHeldEverywhere(t, key, r.Token)
				ctx, cancel := context.WithCancel(context.Background())
				out, err := s.Extend(ctx, key, r.Token, longer)
				cancel()
				mustOutcome(t, "Extend", store.OK)(out, err)
				for i, c := range ns.direct {
					eventually(t, func() bool {
						d, err := c.PTTL(context.Background(), key).Result()
						return err == nil && d > ttl
					}, "round %d: node %d of %d was not extended", round, i, n)
				}
			}
		})
	}
}

// TestCancelledAcquireLeavesNoKey cancels acquisitions at once, while their
// node calls are in flight: whatever each returns, once it is not a grant
// the key must soon be on no node (a grant is released by the test).
func TestCancelledAcquireLeavesNoKey(t *testing.T) {
	ns := startNodes(t, 5, false)
	s := ns.store(t)
	for range 20 {
		key := newKey(t)
		r := req(key, time.Minute)
		ctx, cancel := context.WithCancel(context.Background())
		go cancel()
		g, _ := s.Acquire(ctx, r)
		if g.Acquired {
			mustOutcome(t, "Release", store.OK)(s.Release(context.Background(), key, r.Token))
		}
		ns.eventuallyFree(t, key, r.Token)
	}
}
