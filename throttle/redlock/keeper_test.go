package redlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/faultproxy"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redlock"
	"github.com/go-throttle/throttle/throttle/store"
)

// TestLateLowestGrantKeeps: the contender that took node 0 hears of that
// grant last. Three contenders race on five nodes, each through a proxy of
// its own per node: A's SETs reach nodes 0 and 3 first, B's nodes 1 and 2,
// C's node 4, so that nobody holds a quorum; B and C are refused first,
// and node 0's reply to A comes two seconds after the others'. B and C let
// go; A must wait for that reply to learn that it keeps (the holder of the
// lowest node), then retry and win. Deciding without it, A let go
// too, and all three were refused: nobody won the key. A hears its grant
// on node 3 with the refusals (a split vote), or with node 0's (refusals
// first, with no grant among them).
func TestLateLowestGrantKeeps(t *testing.T) {
	const late = 2 * time.Second
	for name, node3 := range map[string]time.Duration{"split": 0, "refusal-first": late} {
		t.Run(name, func(t *testing.T) { lateLowestGrant(t, late, node3) })
	}
}

// lateLowestGrant runs TestLateLowestGrantKeeps's race, node 0's reply to A
// late, node 3's by node3.
func lateLowestGrant(t *testing.T, late, node3 time.Duration) {
	ns := startNodes(t, 5, false)
	first := []int{0, 1, 1, 0, 2} // the contender whose SET reaches each node first
	proxies := make([][]*faultproxy.Proxy, 3)
	stores := make([]*redlock.Store, 3)
	for c := range stores {
		clients := make([]redis.UniversalClient, len(ns.srvs))
		for i, srv := range ns.srvs {
			p := faultproxy.Start(t, srv.Addr)
			proxies[c] = append(proxies[c], p)
			cl := redis.NewClient(&redis.Options{Addr: p.Addr(), ContextTimeoutEnabled: true})
			t.Cleanup(func() { _ = cl.Close() })
			clients[i] = cl
		}
		// The node timeout outlasts the late reply, which A waits for.
		s, err := redlock.New(clients, redlock.WithNodeTimeout(3*late))
		require.NoError(t, err)
		closeAtEnd(t, s)
		warmUp(s, 1) // connections made before the faults
		stores[c] = s
	}

	key := newKey(t)
	reqs := []store.Request{req(key, time.Minute), req(key, time.Minute), req(key, time.Minute)}
	for i, c := range first { // hold the SETs that come second
		for o := range proxies {
			if o != c {
				proxies[o][i].SetBlackHole(true)
			}
		}
	}
	proxies[0][0].SetLatency(0, late)
	proxies[0][3].SetLatency(0, node3)
	grants, errs := make([]store.Grant, len(stores)), make([]error, len(stores))
	var wg sync.WaitGroup
	for c, s := range stores {
		wg.Go(func() { grants[c], errs[c] = s.Acquire(context.Background(), reqs[c]) })
	}
	eventually(t, func() bool {
		for i, c := range first {
			if ns.holder(t, i, key) != reqs[c].Token {
				return false
			}
		}
		return true
	}, "the first SETs did not all land")
	// B's and C's releases are held until A is answered, so that nobody
	// takes the nodes they let go before every contender decided. (Their
	// SETs' replies went through: the key was read on the servers since.)
	releases := []*faultproxy.Proxy{proxies[1][1], proxies[1][2], proxies[2][4]}
	for _, p := range releases {
		p.SetBlackHole(true)
	}
	// Then the SETs that come second, in steps, each once the last one's
	// were answered: B's and C's on node 0 (they learn that it is held
	// first), their others (they are refused and let go), A's.
	for _, step := range [][]*faultproxy.Proxy{
		{proxies[1][0], proxies[2][0]},
		{proxies[1][3], proxies[1][4], proxies[2][1], proxies[2][2], proxies[2][3]},
		{proxies[0][1], proxies[0][2], proxies[0][4]},
	} {
		for _, p := range step {
			before := p.Stats().ServerBytes
			p.SetBlackHole(false)
			eventually(t, func() bool { return p.Stats().ServerBytes > before }, "a held SET was not answered")
		}
	}
	for _, p := range releases {
		p.SetBlackHole(false)
	}
	wg.Wait()
	proxies[0][0].Clear()
	proxies[0][3].Clear()

	for c := range stores {
		require.NoError(t, errs[c], "contender %d", c)
	}
	winners := 0
	for _, g := range grants {
		if g.Acquired {
			winners++
		}
	}
	require.Equal(t, 1, winners, "winners: %+v", grants)
	require.True(t, grants[0].Acquired, "A, the holder of node 0, was refused: %+v", grants)
	require.GreaterOrEqual(t, ns.holding(t, key, reqs[0].Token), 3, "A holds a quorum")
}

// TestKeeperOutlastsTimeout: a split vote whose keeper (the holder of node
// 0) must wait for two partial holds to expire. Its retries take longer
// than the limiter's Timeout while the nodes answer every one, so the
// limiter keeps waiting and the keeper wins: the nodes' answers count as
// the store's, and the deadline the keeper reads moves with them. Cut at
// the first Timeout, the copy was turned away as a duplicate although no
// token held the key. A split that stands past the keeper's retries is
// given up, and the keeper lets go of node 0.
func TestKeeperOutlastsTimeout(t *testing.T) {
	const timeout = 50 * time.Millisecond
	ns := startNodes(t, 3, false)
	ctx := context.Background()
	// 80 ms: past the Timeout, within the keeper's 16 tries (at least
	// 120 ms: its pauses grow by a millisecond a try).
	for name, hold := range map[string]time.Duration{"wins": 80 * time.Millisecond, "gives-up": time.Minute} {
		t.Run(name, func(t *testing.T) {
			c := throttle.LockConfig{Name: "keeper-" + name, Mode: throttle.Dedupe, TTL: 8 * time.Second,
				Options: throttle.Options{WhenStoreFails: throttle.FailClosed, Timeout: timeout}}
			l := newLock(t, ns.store(t), c)
			// An answer first: the limiter then gives the store one
			// Timeout of silence, not the ten of a cold start.
			_, err := l.Admit(ctx, "warm-up")
			require.NoError(t, err)
			key := storekit.Key("throttle", c.Name, "user")
			ns.hold(t, key, "partial-x", hold, 1)
			ns.hold(t, key, "partial-y", hold, 2)
			lease, err := l.Admit(ctx, "user")
			if hold < time.Second {
				require.NoError(t, err, "the keeper must win once the partial holds expire")
				require.NotNil(t, lease)
				// A quorum: a partial hold may outlive the winning round.
				require.GreaterOrEqual(t, ns.holding(t, key, ns.holder(t, 0, key)), 2, "nodes that hold the admitted key")
				return
			}
			require.Nil(t, lease)
			require.ErrorIs(t, err, throttle.ErrContended)
			eventually(t, func() bool { return ns.holder(t, 0, key) == "" }, "the keeper did not let go of node 0")
		})
	}
}

// TestSlowLastNodeDecidesSplit: the key is free but for node 0, where a
// holder's release is still on its way (Release returns once a quorum let
// go), and node 2 answers slowly. A newcomer then holds node 1 and sees
// node 0 held, a split it loses to node 0's holder, yet node 2 is about to
// give it a quorum. It must wait for that live node and win. Deciding after
// twice the first answers' time, it was refused for the whole minute that
// node 0's copy had left, though no token held the key (CI, on a loaded
// machine: storetest's odd-keys check). A node whose last call timed out is
// not waited for so long: see TestExactlyOneWithMinorityDown/stopped.
func TestSlowLastNodeDecidesSplit(t *testing.T) {
	ns := startNodes(t, 3, true)
	s := ns.store(t)
	warmUp(s, 1)
	key := newKey(t)
	ns.hold(t, key, "leaving", time.Minute, 0)
	ns.proxies[2].SetLatency(100*time.Millisecond, 0) // a tenth of the node timeout
	r := req(key, time.Minute)
	mustAcquire(t, s, r)
	ns.proxies[2].Clear()
	require.Equal(t, 2, ns.holding(t, key, r.Token), "nodes 1 and 2 hold the newcomer's key")
}
