package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redlock"
	"github.com/go-throttle/throttle/throttle/store"
)

// TestExactlyOneWithMinorityDown is issue 35's double click on five nodes:
// all up, two killed (SIGKILL) or two stopped (SIGSTOP). For each of many
// users, 20 duplicates race through two Dedupe Locks on two Stores (two
// processes), which cancel each store call's context as soon as it returns.
// Exactly one must be admitted, never none, the others turned away as
// duplicates (no store error: a quorum is alive), and the admitted key must
// be on at least three live nodes.
func TestExactlyOneWithMinorityDown(t *testing.T) {
	const users, racers, ttl = 30, 20, 10 * time.Second
	for _, fault := range []string{"none", "killed", "stopped"} {
		t.Run(fault, func(t *testing.T) {
			// Proxied: the clients' dials to a dead or stopped server end
			// with the test (the proxy takes them).
			ns := startNodes(t, 5, true)
			// A loaded test machine can make a node miss the default
			// timeouts (100 ms); the test counts admissions, not speed,
			// so both are ten times theirs (testNodeTimeout), in the
			// default ratio.
			c := throttle.LockConfig{Name: "split-" + fault, Mode: throttle.Dedupe, TTL: ttl,
				Options: throttle.Options{WhenStoreFails: throttle.FailClosed, Timeout: time.Second}}
			var locks []*throttle.Lock
			for range 2 {
				s := ns.store(t)
				warmUp(s, racers)
				locks = append(locks, newLock(t, s, c))
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
			for u := range users {
				user := fmt.Sprint("user-", u)
				var (
					wg       sync.WaitGroup
					admitted atomic.Int32
					start    = make(chan struct{})
					mu       sync.Mutex
					answers  []string // each duplicate's, for a failure's message
				)
				for i := range racers {
					wg.Go(func() {
						<-start
						time.Sleep(rand.N(3 * time.Millisecond)) // requests arrive spread out
						sent := time.Now()
						_, err := locks[i%2].Admit(context.Background(), user)
						mu.Lock()
						answers = append(answers, fmt.Sprintf("%d after %v: %v", i, time.Since(sent), err))
						mu.Unlock()
						var ce *throttle.ContendedError
						if err == nil {
							admitted.Add(1)
						} else if !errors.As(err, &ce) {
							assert.NoError(t, err, "%s: duplicate %d", user, i)
						}
					})
				}
				close(start)
				wg.Wait()
				require.EqualValues(t, 1, admitted.Load(), "%s: admissions of %d duplicates: %q", user, racers, answers)
				// The losers' releases may still be on their way.
				key, held := storekit.Key("throttle", c.Name, user), map[string]int{}
				eventually(t, func() bool {
					clear(held)
					for _, i := range live {
						held[ns.holder(t, i, key)]++
					}
					delete(held, "")
					return len(held) == 1
				}, "%s: not one token holds the key on the live nodes: %v", user, held)
				for _, n := range held {
					require.GreaterOrEqual(t, n, 3, "%s: live nodes that hold the admitted key", user)
				}
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

// TestExtendReachesEveryNode acquires and then extends a lock on 5 and 8
// nodes, cancelling the caller's context as soon as each call returns, as
// the limiter does: every node must still get the key, and every node's
// PTTL must be extended, not only the first quorum's.
func TestExtendReachesEveryNode(t *testing.T) {
	const ttl, longer, rounds = 10 * time.Second, time.Minute, 15
	for _, n := range []int{5, 8} {
		t.Run(fmt.Sprint(n, "-nodes"), func(t *testing.T) {
			ns := startNodes(t, n, false)
			s := ns.store(t)
			for round := range rounds {
				key := newKey(t)
				r := req(key, ttl)
				ctx, cancel := context.WithCancel(context.Background())
				g, err := s.Acquire(ctx, r)
				cancel()
				require.NoError(t, err)
				require.True(t, g.Acquired)
				ns.eventuallyHeldEverywhere(t, key, r.Token)
				ctx, cancel = context.WithCancel(context.Background())
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

// TestUnresolvedSplitIsNoRefusal: four nodes (a quorum of three), two of
// them held by two other tokens each (contenders that crashed mid-way): no
// token can hold a quorum, so an acquisition that takes the other two,
// among them the lowest node (the keeper), is neither granted nor told the
// key is held, but fails with ErrNoQuorum after its retries, and leaves
// its own part on no node. One that does not hold the lowest node is
// refused, as if that node's holder were about to win, and lets go at once:
// a contender's partial grant then stands for its TTL, as a grant would.
func TestUnresolvedSplitIsNoRefusal(t *testing.T) {
	ns := startNodes(t, 4, false)
	s := ns.store(t)
	for name, others := range map[string][]int{"keeper": {1, 2}, "releaser": {0, 2}} {
		t.Run(name, func(t *testing.T) {
			key := newKey(t)
			r := req(key, 10*time.Second)
			for _, i := range others {
				ns.hold(t, key, storekit.NewToken(), time.Minute, i)
			}
			if name == "releaser" {
				g := mustRefuse(t, s, r)
				assert.Greater(t, g.Remaining, 50*time.Second, "the lowest node's holder's time")
				ns.eventuallyFree(t, key, r.Token)
				return
			}
			// A node slow to answer on a loaded machine may make the key
			// look held by others (a refusal); every node answering gives
			// the one verdict, which a few tries reach.
			var g store.Grant
			var err error
			for try := 0; try < 5 && err == nil && !g.Acquired; try++ {
				g, err = s.Acquire(context.Background(), r)
				ns.eventuallyFree(t, key, r.Token)
			}
			require.ErrorIs(t, err, redlock.ErrNoQuorum, "a split vote that cannot resolve: %+v", g)
		})
	}
}

// TestUnresolvedSplitIsNeverLetThrough: through a Lock whose store failures
// fail open (a Dedupe's default), a split vote that cannot resolve is
// turned away as load (503 in the guard), never let through: another copy
// may win the key meanwhile, and a fail-open would admit it twice.
func TestUnresolvedSplitIsNeverLetThrough(t *testing.T) {
	ns := startNodes(t, 4, false)
	l := newLock(t, ns.store(t), throttle.LockConfig{Name: "split-open", TTL: 10 * time.Second})
	key := storekit.Key(l.Config().Prefix, "split-open", "user")
	for _, i := range []int{1, 2} { // we get 0 and 3: the keeper, short of a quorum
		ns.hold(t, key, storekit.NewToken(), time.Minute, i)
	}
	var err error
	for try := 0; try < 5 && (try == 0 || errors.Is(err, throttle.ErrContended)); try++ { // as above
		lease, aerr := l.Admit(context.Background(), "user")
		require.Nil(t, lease)
		err = aerr
	}
	require.ErrorIs(t, err, store.ErrBusy, "an unresolved split vote must be turned away, not failed open")
	st := l.Stats()
	require.Equal(t, uint64(1), st.Full, "%+v", st)
	require.Zero(t, st.FailedOpen, "%+v", st)
}
