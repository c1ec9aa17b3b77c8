package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// TestDelayedRestart shows why a node that lost its keys must stay out for
// the longest TTL before it serves again (seed 004, and the Redlock
// description's "delayed restarts").
//
// Holder A takes a key on all three nodes. One node restarted empty at once
// is harmless: the other two still refuse contender B. A second node
// restarted empty at once gives B a quorum while A's validity runs: two
// holders. When the operator instead keeps the crashed nodes out for the
// TTL, B gets no quorum while A's lease is valid, and gets the key only
// after A's validity is over.
func TestDelayedRestart(t *testing.T) {
	t.Run("immediate", func(t *testing.T) {
		ns := startNodes(t, 3, false)
		holderA, contenderB := ns.store(t), ns.store(t)
		const ttl = time.Minute
		key := newKey(t)
		a := req(key, ttl)
		gA := mustAcquire(t, holderA, a)
		aValidUntil := time.Now().Add(gA.TTL) // A believes it holds the lock until then
		ns.eventuallyHeldEverywhere(t, key, a.Token)

		ns.srvs[0].Kill(t)
		ns.srvs[0].Restart(t) // empty: no persistence
		mustRefuse(t, contenderB, req(key, ttl))

		ns.srvs[1].Kill(t)
		ns.srvs[1].Restart(t)
		b := req(key, ttl)
		g, err := contenderB.Acquire(context.Background(), b)
		if err != nil || !g.Acquired {
			t.Fatalf("B after two empty restarts = %+v, %v; the test expects the double grant", g, err)
		}
		if now := time.Now(); !now.Before(aValidUntil) {
			t.Fatalf("B got the key at %v, after A's validity ended (%v): no overlap shown", now, aValidUntil)
		}
		// Two holders: A's lease is still valid, and B holds a quorum.
		if n := ns.holding(t, key, b.Token); n < 2 {
			t.Fatalf("B holds %d nodes", n)
		}
		if ns.holder(t, 2, key) != a.Token {
			t.Fatal("node 2 no longer holds A's key")
		}
		t.Logf("double grant: B holds nodes 0 and 1 while A's lease has %v of validity left", time.Until(aValidUntil).Round(time.Second))
	})

	t.Run("delayed", func(t *testing.T) {
		ns := startNodes(t, 3, false)
		holderA, contenderB := ns.store(t), ns.store(t)
		const ttl = 500 * time.Millisecond // the longest TTL in use
		key := newKey(t)
		a := req(key, ttl)
		gA := mustAcquire(t, holderA, a)
		aValidUntil := time.Now().Add(gA.TTL)

		ns.srvs[0].Kill(t)
		ns.srvs[1].Kill(t)
		crashed := time.Now()
		// While the two nodes stay out, B can never assemble a quorum:
		// it gets errors (too few nodes answer) or refusals, never the key.
		for time.Since(crashed) < ttl {
			g, err := contenderB.Acquire(context.Background(), req(key, ttl))
			if err == nil && g.Acquired {
				t.Fatal("B got the key with two of three nodes down")
			}
			time.Sleep(20 * time.Millisecond)
		}
		// The operator waited the longest TTL: restart them empty now.
		ns.srvs[0].Restart(t)
		ns.srvs[1].Restart(t)
		b := req(key, time.Minute)
		var (
			g   store.Grant
			err error
		)
		// The clients reconnect to the restarted servers by themselves.
		deadline := time.Now().Add(patience)
		for {
			g, err = contenderB.Acquire(context.Background(), b)
			if g.Acquired {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("B could not take the key after the delayed restart: %+v, %v", g, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if got := time.Now(); got.Before(aValidUntil) {
			t.Fatalf("B got the key at %v, while A's lease was valid until %v", got, aValidUntil)
		}
	})
}
