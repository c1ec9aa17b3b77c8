package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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
			for _, i := range []int{3, 4} {
				if fault == "black-hole" {
					ns.proxies[i].SetBlackHole(true)
				} else {
					ns.srvs[i].Kill(t)
				}
			}
			ctx := context.Background()
			for range 3 {
				key := newKey(t)
				r := req(key, 10*time.Second)
				within(t, patience, "Acquire with two of five nodes down", func() { mustAcquire(t, s, r) })
				if n := ns.holding(t, key, r.Token); n != 3 {
					t.Fatalf("%d live nodes hold the key, want all 3", n)
				}
				within(t, patience, "a contender's Acquire", func() { mustRefuse(t, s, req(key, 10*time.Second)) })
				within(t, patience, "Release", func() {
					mustOutcome(t, "Release", store.OK)(s.Release(ctx, key, r.Token))
				})
			}
			l, err := throttle.New(s, throttle.Policy{Name: "minority", WhenStoreFails: throttle.FailClosed})
			if err != nil {
				t.Fatal(err)
			}
			lease, err := l.Admit(ctx, "user")
			if err != nil || lease == nil {
				t.Fatalf("Admit with two of five nodes down = %v, %v; want a lease", lease, err)
			}
			if _, err := l.Admit(ctx, "user"); !errors.Is(err, throttle.ErrContended) {
				t.Fatalf("second Admit = %v, want ErrContended", err)
			}
		})
	}
}

// TestMajorityDownFails: with three of five nodes down no quorum is
// possible: Acquire fails with an error (not a refusal), the two live
// nodes' partial locks are released before it returns, and a Limiter
// failing closed turns the request away with ErrStore.
func TestMajorityDownFails(t *testing.T) {
	for _, fault := range faults {
		t.Run(fault.name, func(t *testing.T) {
			ns := startNodes(t, 5, true)
			s := fault.store(ns, t)
			fault := fault.fault
			for _, i := range []int{2, 3, 4} {
				if fault == "black-hole" {
					ns.proxies[i].SetBlackHole(true)
				} else {
					ns.srvs[i].Kill(t)
				}
			}
			key := newKey(t)
			r := req(key, 10*time.Second)
			var (
				g   store.Grant
				err error
			)
			within(t, patience, "Acquire with three of five nodes down", func() {
				g, err = s.Acquire(context.Background(), r)
			})
			var qe *redlock.QuorumError
			if g.Acquired || !errors.As(err, &qe) {
				t.Fatalf("Acquire = %+v, %v; want a *QuorumError", g, err)
			}
			if qe.Quorum != 3 || qe.Errs[2] == nil || qe.Errs[3] == nil || qe.Errs[4] == nil {
				t.Fatalf("QuorumError %+v: want quorum 3, errors of nodes 2-4", qe)
			}
			if qe.Answered == 2 {
				// Both live nodes answered before the decision: they
				// granted, so the error is not "not applied", and
				// their locks were released before Acquire returned.
				if qe.Errs[0] != nil || qe.Errs[1] != nil || errors.Is(err, store.ErrNotApplied) {
					t.Fatalf("QuorumError %+v with two answers", qe)
				}
				for _, i := range []int{0, 1} {
					if h := ns.holder(t, i, key); h == r.Token {
						t.Fatalf("node %d still holds the failed acquisition's lock", i)
					}
				}
			} else {
				// Three nodes failed fast (a killed node behind the
				// proxy answers EOF at once) and decided before the
				// live ones answered: their grants, if any, are
				// released in the background as they arrive.
				for _, i := range []int{0, 1} {
					deadline := time.Now().Add(patience)
					for ns.holder(t, i, key) == r.Token {
						if time.Now().After(deadline) {
							t.Fatalf("node %d still holds the failed acquisition's lock", i)
						}
						time.Sleep(5 * time.Millisecond)
					}
				}
			}

			l, lerr := throttle.New(s, throttle.Policy{Name: "majority", WhenStoreFails: throttle.FailClosed})
			if lerr != nil {
				t.Fatal(lerr)
			}
			within(t, patience, "Admit", func() {
				lease, err := l.Admit(context.Background(), "user")
				if lease != nil || !errors.Is(err, throttle.ErrStore) {
					t.Fatalf("Admit failing closed = %v, %v; want ErrStore", lease, err)
				}
			})
		})
	}
}

// TestAllNodesRefusingIsNotApplied: when every node refuses the connection
// the error says that nothing was taken (store.ErrNotApplied), so that the
// Limiter queues no release; with one node up it does not. (The clients
// dial once: go-redis retries a refused dial 5 times, 100 ms apart, by
// default, and a node call ends at its timeout before.)
func TestAllNodesRefusingIsNotApplied(t *testing.T) {
	ns := startNodes(t, 3, false)
	ns.srvs[0].Kill(t)
	ns.srvs[1].Kill(t)
	s, err := redlock.New(ns.clients(t, func(o *redis.Options) { o.MaxRetries, o.DialerRetries = -1, 1 }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	key := newKey(t)
	_, err = s.Acquire(context.Background(), req(key, time.Minute))
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) || errors.Is(err, store.ErrNotApplied) {
		t.Fatalf("Acquire with one node up = %v; want a QuorumError not marked ErrNotApplied (the node granted)", err)
	}
	for i, e := range qe.Errs[:2] {
		if !errors.Is(e, store.ErrNotApplied) {
			t.Fatalf("node %d: %v; want the refused dial marked ErrNotApplied by redisstore", i, e)
		}
	}
	ns.srvs[2].Kill(t)
	_, err = s.Acquire(context.Background(), req(key, time.Minute))
	if !errors.Is(err, store.ErrNotApplied) {
		t.Fatalf("Acquire with every node refusing = %v; want store.ErrNotApplied", err)
	}
}

// TestSlowNodeDoesNotSlowAdmission: a node whose latency is far above the
// node timeout costs an acquisition at most the node timeout: it is decided
// without that node (hang detector: well under the latency). Two slow nodes
// of three make acquisitions fail, as quickly. The caller's context bounds
// a call even when the node timeout is longer.
func TestSlowNodeDoesNotSlowAdmission(t *testing.T) {
	const latency = 2 * time.Second // the hang detectors below fire well before
	ns := startNodes(t, 3, true)
	s := ns.store(t) // default node timeout: 100 ms for these TTLs
	ns.proxies[2].SetLatency(latency, 0)
	ctx := context.Background()
	for range 5 {
		key := newKey(t)
		r := req(key, 10*time.Second)
		within(t, latency/2, "Acquire with one slow node", func() { mustAcquire(t, s, r) })
		within(t, latency/2, "a refused Acquire with one slow node", func() { mustRefuse(t, s, req(key, 10*time.Second)) })
		within(t, latency/2, "Release with one slow node", func() {
			mustOutcome(t, "Release", store.OK)(s.Release(ctx, key, r.Token))
		})
	}

	ns.proxies[1].SetLatency(latency, 0)
	within(t, latency/2, "Acquire with two slow nodes", func() {
		if g, err := s.Acquire(ctx, req(newKey(t), 10*time.Second)); err == nil {
			t.Fatalf("Acquire with two of three nodes slow = %+v, want an error", g)
		}
	})

	patient := ns.store(t, redlock.WithNodeTimeout(time.Second))
	within(t, latency/2, "Acquire bounded by the caller's context", func() {
		cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		if _, err := patient.Acquire(cctx, req(newKey(t), 10*time.Second)); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Acquire past the caller's deadline = %v, want context.DeadlineExceeded", err)
		}
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
		if g.Remaining <= 50*time.Second || g.Remaining > time.Minute {
			t.Fatalf("Remaining = %v, want about the other holder's minute", g.Remaining)
		}
		ns.eventuallyFree(t, key, r.Token)
	})
	t.Run("failed", func(t *testing.T) {
		ns := startNodes(t, 3, true)
		s := ns.store(t)
		ns.proxies[1].SetBlackHole(true)
		ns.proxies[2].SetBlackHole(true)
		key := newKey(t)
		r := req(key, time.Minute)
		if _, err := s.Acquire(context.Background(), r); err == nil {
			t.Fatal("Acquire with two of three nodes silent succeeded")
		}
		// Node 0 granted and was released before Acquire returned.
		if h := ns.holder(t, 0, key); h == r.Token {
			t.Fatal("node 0 still holds the lock of the failed acquisition")
		}
	})
	t.Run("lost-reply", func(t *testing.T) {
		// Node 0 runs the SET and the connection breaks before the
		// reply: the outcome is unknown to the store (its client does
		// not retry), so it must release node 0 all the same.
		ns := startNodes(t, 3, true)
		s, err := redlock.New(ns.clients(t, func(o *redis.Options) { o.MaxRetries = -1 }))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		warm := req(newKey(t), time.Minute) // a pooled connection, handshake done
		mustAcquire(t, s, warm)
		mustOutcome(t, "Release", store.OK)(s.Release(context.Background(), warm.Key, warm.Token))

		key := newKey(t)
		ns.hold(t, key, "other", time.Minute, 1, 2)
		ns.proxies[0].ResetOnNextReply()
		r := req(key, time.Minute)
		mustRefuse(t, s, r) // nodes 1 and 2 decide it, maybe before node 0 answers
		for deadline := time.Now().Add(patience); ns.proxies[0].Stats().Resets == 0; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("node 0's reply was never lost: the test tests nothing")
			}
		}
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
		if g.Remaining <= lo-time.Second || g.Remaining > hi {
			t.Fatalf("Remaining = %v, want in (%v, %v]", g.Remaining, lo, hi)
		}
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
// (the network is slower than the TTL) is a failure, ErrLate, for Acquire
// and for Extend. The proxy's latency is a lower bound, so this needs no
// timing luck.
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
	if g, err := s.Acquire(ctx, req(newKey(t), ttl)); !errors.Is(err, redlock.ErrLate) {
		t.Fatalf("Acquire answered after its %v TTL = %+v, %v; want ErrLate", ttl, g, err)
	}
	if out, err := s.Extend(ctx, held.Key, held.Token, ttl); !errors.Is(err, redlock.ErrLate) {
		t.Fatalf("Extend answered after its %v TTL = %v, %v; want ErrLate", ttl, out, err)
	}
	for _, p := range ns.proxies {
		p.Clear()
	}
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
		want    store.Outcome // 0: an error
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
				var qe *redlock.QuorumError
				switch {
				case c.want == 0 && !errors.As(err, &qe):
					t.Fatalf("%s = %v, %v; want a *QuorumError", op, out, err)
				case c.want != 0 && (err != nil || out != c.want):
					t.Fatalf("%s = %v, %v; want %v", op, out, err, c.want)
				}
				if op == "release" && ns.holder(t, 2, r.Key) == r.Token {
					t.Fatal("Release left the lock on node 2, which held it")
				}
			})
		}
	}
}

// TestWatchWithANodeDown: a watch needs only one node; a release on the
// others wakes the waiter, and a watch with every node down fails (the
// Limiter then polls).
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
	if err != nil {
		t.Fatalf("Watch with two of three nodes up: %v", err)
	}
	defer stop()
	mustOutcome(t, "Release", store.OK)(s.Release(ctx, r.Key, r.Token))
	select {
	case <-wake:
	case <-time.After(patience):
		t.Fatal("no wake-up after the release")
	}
	stop()
	stop() // safe twice

	ns.srvs[0].Kill(t)
	ns.srvs[1].Kill(t)
	wctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	within(t, patience, "Watch with every node down", func() {
		if _, _, err := s.Watch(wctx, r.Key); err == nil {
			t.Fatal("Watch with every node down succeeded")
		}
	})
}
