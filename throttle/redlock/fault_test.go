package redlock_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redlock"
	"github.com/go-throttle/throttle/throttle/store"
)

// nodeFault is a node fault the quorum tests inject ("black-hole" or
// "killed"), on nodes reached through redisstore (New) or rueidisstore
// (NewOnStores).
type nodeFault struct {
	name, fault string
	store       func(*nodes, testing.TB) *redlock.Store
}

var faults = []nodeFault{
	{"black-hole/redisstore", "black-hole", (*nodes).storeTB},
	{"killed/redisstore", "killed", (*nodes).storeTB},
	{"black-hole/rueidisstore", "black-hole", (*nodes).rueidisStoreTB},
	{"killed/rueidisstore", "killed", (*nodes).rueidisStoreTB},
}

// down black-holes (behind their proxies) or kills the nodes idx. The
// black holes clear at the test's end, before the store closes (cleanups
// run last first), so that Close does not wait out the background
// releases' retries on silent nodes (2, 4 and 8 node timeouts: some 14 s).
func down(t *testing.T, ns *nodes, fault string, idx ...int) {
	for _, i := range idx {
		if fault == "black-hole" {
			ns.proxies[i].SetBlackHole(true)
			t.Cleanup(ns.proxies[i].Clear)
		} else {
			ns.srvs[i].Kill(t)
		}
	}
}

func (ns *nodes) storeTB(t testing.TB) *redlock.Store        { return ns.store(t) }
func (ns *nodes) rueidisStoreTB(t testing.TB) *redlock.Store { return ns.rueidisStore(t) }

// TestMinorityDownStillAdmits: five nodes, two of them silent (black hole)
// or dead (killed): acquisitions, refusals and releases still work on the
// other three, and the two do not hold them up for more than the node
// timeout.
func TestMinorityDownStillAdmits(t *testing.T) {
	for _, fault := range faults {
		t.Run(fault.name, func(t *testing.T) {
			ns := startNodes(t, 5, true)
			s := fault.store(ns, t)
			fault := fault.fault
			down(t, ns, fault, []int{3, 4}...)
			ctx := context.Background()
			for range 3 {
				key := newKey(t)
				r := req(key, 10*time.Second)
				within(t, patience, "Acquire with two of five nodes down", func() { mustAcquire(t, s, r) })
				require.Equal(t, 3, ns.holding(t, key, r.Token), "every live node holds the key")
				within(t, patience, "a contender's Acquire", func() { mustRefuse(t, s, req(key, 10*time.Second)) })
				within(t, patience, "Release", func() {
					mustOutcome(t, "Release", store.OK)(s.Release(ctx, key, r.Token))
				})
			}
			l, err := throttle.NewLock(s, throttle.LockConfig{Name: "minority", Options: throttle.Options{WhenStoreFails: throttle.FailClosed}})
			require.NoError(t, err)
			lease, err := l.Admit(ctx, "user")
			require.NoError(t, err, "Admit with two of five nodes down")
			require.NotNil(t, lease)
			_, err = l.Admit(ctx, "user")
			require.ErrorIs(t, err, throttle.ErrContended, "second Admit")
		})
	}
}

// TestMajorityDownFails: with three of five nodes down no quorum is
// possible: Acquire fails with ErrNoQuorum (not a refusal) naming the
// failed nodes, the two live nodes' partial locks are released, and a
// Lock failing closed turns the request away with ErrStore.
func TestMajorityDownFails(t *testing.T) {
	for _, fault := range faults {
		t.Run(fault.name, func(t *testing.T) {
			ns := startNodes(t, 5, true)
			s := fault.store(ns, t)
			fault := fault.fault
			down(t, ns, fault, []int{2, 3, 4}...)
			key := newKey(t)
			r := req(key, 10*time.Second)
			var (
				g   store.Grant
				err error
			)
			within(t, patience, "Acquire with three of five nodes down", func() {
				g, err = s.Acquire(context.Background(), r)
			})
			require.ErrorIs(t, err, redlock.ErrNoQuorum)
			require.False(t, g.Acquired)
			for _, i := range []int{2, 3, 4} {
				assert.Contains(t, err.Error(), fmt.Sprintf("node %d: ", i))
			}
			if strings.Contains(err.Error(), "2 of 5 nodes answered") {
				// Both live nodes answered before the decision: they
				// granted, so nothing says "not applied", and their
				// locks were released before Acquire returned.
				require.NotErrorIs(t, err, store.ErrNotApplied)
				for _, i := range []int{0, 1} {
					require.NotEqual(t, r.Token, ns.holder(t, i, key), "node %d still holds the lock", i)
				}
			}
			// Otherwise three nodes failed fast (a killed node behind the
			// proxy answers EOF at once) and decided before the live
			// ones answered: their grants are released as they arrive.
			ns.eventuallyFree(t, key, r.Token)

			l, err := throttle.NewLock(s, throttle.LockConfig{Name: "majority", Options: throttle.Options{WhenStoreFails: throttle.FailClosed}})
			require.NoError(t, err)
			within(t, patience, "Admit", func() {
				lease, err := l.Admit(context.Background(), "user")
				require.ErrorIs(t, err, throttle.ErrStore, "Admit failing closed")
				require.Nil(t, lease)
			})
		})
	}
}

// TestAllNodesRefusingIsNotApplied: when every node refuses the connection
// the error says that nothing was taken (store.ErrNotApplied), so that the
// Lock queues no release; with one node up it does not. (The clients
// dial once: go-redis retries a refused dial 5 times, 100 ms apart, by
// default, and a node call ends at its timeout before.)
func TestAllNodesRefusingIsNotApplied(t *testing.T) {
	ns := startNodes(t, 3, false)
	ns.srvs[0].Kill(t)
	ns.srvs[1].Kill(t)
	s, err := redlock.New(ns.clients(t, func(o *redis.Options) { o.MaxRetries, o.DialerRetries = -1, 1 }))
	require.NoError(t, err)
	closeAtEnd(t, s)
	key := newKey(t)
	_, err = s.Acquire(context.Background(), req(key, time.Minute))
	require.ErrorIs(t, err, redlock.ErrNoQuorum, "Acquire with one node up")
	require.NotErrorIs(t, err, store.ErrNotApplied, "the live node granted")
	assert.Contains(t, err.Error(), "node 0: ")
	assert.Contains(t, err.Error(), "node 1: ")
	ns.srvs[2].Kill(t)
	_, err = s.Acquire(context.Background(), req(key, time.Minute))
	require.ErrorIs(t, err, redlock.ErrNoQuorum)
	require.ErrorIs(t, err, store.ErrNotApplied, "Acquire with every node refusing")
	_, err = s.Release(context.Background(), key, "t")
	require.ErrorIs(t, err, store.ErrNotApplied, "Release with every node refusing")
}

// TestSlowNodeDoesNotSlowAdmission: a node whose latency is far above the
// node timeout costs an acquisition at most the node timeout: it is decided
// without that node (hang detector: well under the latency). Two slow nodes
// of three make acquisitions fail, as quickly. The caller's context bounds
// a call even when the node timeout is longer.
func TestSlowNodeDoesNotSlowAdmission(t *testing.T) {
	const latency = 2 * time.Second // the hang detectors below fire well before
	ns := startNodes(t, 3, true)
	// A node timeout well below the latency, and above what a loaded
	// machine's live nodes take.
	s := ns.store(t, redlock.WithNodeTimeout(300*time.Millisecond))
	ns.proxies[2].SetLatency(latency, 0)
	ctx := context.Background()
	for range 5 {
		key := newKey(t)
		r := req(key, 10*time.Second)
		within(t, latency/2, "Acquire with one slow node", func() { mustAcquire(t, s, r) })
		within(t, latency/2, "a refused Acquire with one slow node", func() { mustRefuse(t, s, req(key, 10*time.Second)) })
		within(t, latency/2, "Extend with one slow node", func() {
			mustOutcome(t, "Extend", store.OK)(s.Extend(ctx, key, r.Token, 10*time.Second))
		})
		within(t, latency/2, "Release with one slow node", func() {
			mustOutcome(t, "Release", store.OK)(s.Release(ctx, key, r.Token))
		})
	}

	ns.proxies[1].SetLatency(latency, 0)
	within(t, latency/2, "Acquire with two slow nodes", func() {
		_, err := s.Acquire(ctx, req(newKey(t), 10*time.Second))
		require.ErrorIs(t, err, redlock.ErrNoQuorum, "Acquire with two of three nodes slow")
	})

	patient := ns.store(t, redlock.WithNodeTimeout(time.Second))
	within(t, latency/2, "Acquire bounded by the caller's context", func() {
		cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		_, err := patient.Acquire(cctx, req(newKey(t), 10*time.Second))
		require.ErrorIs(t, err, context.DeadlineExceeded, "Acquire past the caller's deadline")
	})
	// Let the delayed commands through before the nodes shut down.
	for _, p := range ns.proxies {
		p.Clear()
	}
}

// TestMissedQuorumReleasesPartialLocks checks each node directly after an
// acquisition that did not get its quorum: the nodes that granted it no
// longer hold its token, whether the quorum was missed because the key is
// held, because nodes failed, or with a node whose reply got lost after
// it took the key.
func TestMissedQuorumReleasesPartialLocks(t *testing.T) {
	t.Run("held", func(t *testing.T) {
		ns := startNodes(t, 3, false)
		s := ns.store(t)
		key := newKey(t)
		ns.hold(t, key, "other", time.Minute, 1, 2)
		r := req(key, time.Minute)
		g := mustRefuse(t, s, r)
		assert.Greater(t, g.Remaining, 50*time.Second, "about the other holder's minute")
		assert.LessOrEqual(t, g.Remaining, time.Minute)
		ns.eventuallyFree(t, key, r.Token)
	})
	t.Run("failed", func(t *testing.T) {
		ns := startNodes(t, 3, true)
		s := ns.store(t)
		ns.proxies[1].SetBlackHole(true)
		ns.proxies[2].SetBlackHole(true)
		key := newKey(t)
		r := req(key, time.Minute)
		_, err := s.Acquire(context.Background(), r)
		require.ErrorIs(t, err, redlock.ErrNoQuorum, "Acquire with two of three nodes silent")
		// Node 0 granted and was released before Acquire returned.
		require.NotEqual(t, r.Token, ns.holder(t, 0, key), "node 0 still holds the lock of the failed acquisition")
	})
	t.Run("lost-reply", func(t *testing.T) {
		// Node 0 runs the SET and the connection breaks before the
		// reply: the outcome is unknown to the store (its client does
		// not retry), so it must release node 0 all the same.
		ns := startNodes(t, 3, true)
		s, err := redlock.New(ns.clients(t, func(o *redis.Options) { o.MaxRetries = -1 }))
		require.NoError(t, err)
		closeAtEnd(t, s)
		warm := req(newKey(t), time.Minute) // a pooled connection, handshake done
		mustAcquire(t, s, warm)
		mustOutcome(t, "Release", store.OK)(s.Release(context.Background(), warm.Key, warm.Token))

		key := newKey(t)
		ns.hold(t, key, "other", time.Minute, 1, 2)
		ns.proxies[0].ResetOnNextReply()
		r := req(key, time.Minute)
		mustRefuse(t, s, r) // nodes 1 and 2 decide it, maybe before node 0 answers
		eventually(t, func() bool { return ns.proxies[0].Stats().Resets > 0 },
			"node 0's reply was never lost: the test tests nothing")
		ns.eventuallyFree(t, key, r.Token)
	})
}

// TestRetryAfterNeedsAQuorum: a refusal's Remaining is when a quorum of
// nodes could be free, not when the first one is. The refusal comes as soon
// as a quorum answered, so a node still silent then is not counted on: the
// figure may be later than the exact one, never earlier.
func TestRetryAfterNeedsAQuorum(t *testing.T) {
	ns := startNodes(t, 3, false)
	s := ns.store(t)
	between := func(t *testing.T, g store.Grant, lo, hi time.Duration) {
		t.Helper()
		// The holders' keys were set a moment ago: allow a second.
		assert.Greater(t, g.Remaining, lo-time.Second)
		assert.LessOrEqual(t, g.Remaining, hi)
	}

	// Two nodes must come free: the second is at 20s (30s if the
	// refusal came before node 0 answered), never the first's 10s.
	key := newKey(t)
	ns.hold(t, key, "other", 10*time.Second, 0)
	ns.hold(t, key, "other", 20*time.Second, 1)
	ns.hold(t, key, "other", 30*time.Second, 2)
	between(t, mustRefuse(t, s, req(key, time.Minute)), 20*time.Second, 30*time.Second)

	// Node 0 is free: it grants, the refusal frees it again, and one
	// more node must come free, at 20s (40s if node 0 answered late).
	key = newKey(t)
	ns.hold(t, key, "other", 20*time.Second, 1)
	ns.hold(t, key, "other", 40*time.Second, 2)
	between(t, mustRefuse(t, s, req(key, time.Minute)), 20*time.Second, 40*time.Second)
}

// TestLateQuorumFails: a quorum that answers after the validity ran out
// (the network is slower than the TTL) is a failure, ErrNoQuorum, for
// Acquire and for Extend, and the late acquisition is released. The
// proxy's latency is a lower bound, so this needs no timing luck.
func TestLateQuorumFails(t *testing.T) {
	ns := startNodes(t, 3, true)
	s := ns.store(t, redlock.WithNodeTimeout(patience))
	ctx := context.Background()
	held := req(newKey(t), time.Minute)
	mustAcquire(t, s, held)

	for _, p := range ns.proxies {
		p.SetLatency(40*time.Millisecond, 0)
	}
	const ttl = 20 * time.Millisecond
	late := req(newKey(t), ttl)
	_, err := s.Acquire(ctx, late)
	require.ErrorIs(t, err, redlock.ErrNoQuorum, "Acquire answered after its TTL")
	assert.Contains(t, err.Error(), "too late")
	_, err = s.Extend(ctx, held.Key, held.Token, ttl)
	require.ErrorIs(t, err, redlock.ErrNoQuorum, "Extend answered after its TTL")
	assert.Contains(t, err.Error(), "too late")
	for _, p := range ns.proxies {
		p.Clear()
	}
	ns.eventuallyFree(t, late.Key, late.Token)
}

// TestDisagreeingNodes: Release and Extend decide on a quorum when the
// nodes disagree (see the package documentation).
func TestDisagreeingNodes(t *testing.T) {
	ns := startNodes(t, 3, true)
	s := ns.store(t)
	ctx := context.Background()
	cases := []struct {
		name    string
		prepare func(key string)
		want    store.Outcome // 0: ErrNoQuorum
	}{
		{"one-node-lost-the-key", func(key string) { ns.direct[0].Del(ctx, key) }, store.OK},
		{"successor-holds-a-quorum", func(key string) { ns.hold(t, key, "successor", time.Minute, 0, 1) }, store.HeldByOther},
		{"expired-on-a-quorum", func(key string) { ns.direct[0].Del(ctx, key); ns.direct[1].Del(ctx, key) }, store.Gone},
		{"partial-lock-of-a-contender", func(key string) {
			ns.direct[0].Del(ctx, key)
			ns.hold(t, key, "contender", time.Minute, 1)
		}, store.Gone},
		{"unknown", func(key string) {
			ns.direct[0].Del(ctx, key)
			ns.proxies[1].SetBlackHole(true)
		}, 0},
	}
	for _, c := range cases {
		for _, op := range []string{"release", "extend"} {
			t.Run(c.name+"/"+op, func(t *testing.T) {
				r := req(newKey(t), time.Minute)
				mustAcquire(t, s, r)
				ns.eventuallyHeldEverywhere(t, r.Key, r.Token)
				c.prepare(r.Key)
				defer ns.proxies[1].Clear()
				var (
					out store.Outcome
					err error
				)
				within(t, patience, op, func() {
					if op == "release" {
						out, err = s.Release(ctx, r.Key, r.Token)
					} else {
						out, err = s.Extend(ctx, r.Key, r.Token, time.Minute)
					}
				})
				if c.want == 0 {
					require.ErrorIs(t, err, redlock.ErrNoQuorum, op)
					require.NotErrorIs(t, err, store.ErrNotApplied, "node 2 answered")
				} else {
					require.NoError(t, err, op)
					require.Equal(t, c.want, out, op)
				}
				if op == "release" {
					require.NotEqual(t, r.Token, ns.holder(t, 2, r.Key), "Release left the lock on node 2, which held it")
				}
			})
		}
	}
}

// TestWatchWithANodeDown: a watch needs only one node; a release on the
// others wakes the waiter, and a watch with every node down fails (the
// Lock then polls).
func TestWatchWithANodeDown(t *testing.T) {
	ns := startNodes(t, 3, false)
	s := ns.store(t)
	ns.srvs[2].Kill(t)
	ctx := context.Background()
	r := req(newKey(t), time.Minute)
	mustAcquire(t, s, r)
	var (
		wake <-chan struct{}
		stop func()
		err  error
	)
	within(t, patience, "Watch", func() { wake, stop, err = s.Watch(ctx, r.Key) })
	require.NoError(t, err, "Watch with two of three nodes up")
	defer stop()
	mustOutcome(t, "Release", store.OK)(s.Release(ctx, r.Key, r.Token))
	select {
	case <-wake:
	case <-time.After(patience):
		require.Fail(t, "no wake-up after the release")
	}
	stop()
	stop() // safe twice

	ns.srvs[0].Kill(t)
	ns.srvs[1].Kill(t)
	wctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	within(t, patience, "Watch with every node down", func() {
		_, _, err := s.Watch(wctx, r.Key)
		require.Error(t, err, "Watch with every node down")
	})
}
