package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
		mustAcquire(t, contenderB, b) // the double grant this test shows
		require.True(t, time.Now().Before(aValidUntil), "B got the key after A's validity ended: no overlap shown")
		// Two holders: A's lease is still valid, and B holds a quorum.
		require.GreaterOrEqual(t, ns.holding(t, key, b.Token), 2, "B holds a quorum")
		require.Equal(t, a.Token, ns.holder(t, 2, key), "node 2 still holds A's key")
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
			g, _ := contenderB.Acquire(context.Background(), req(key, ttl))
			require.False(t, g.Acquired, "B got the key with two of three nodes down")
			time.Sleep(20 * time.Millisecond)
		}
		// The operator waited the longest TTL: restart them empty now.
		ns.srvs[0].Restart(t)
		ns.srvs[1].Restart(t)
		b := req(key, time.Minute)
		// The clients reconnect to the restarted servers by themselves.
		eventually(t, func() bool {
			g, _ := contenderB.Acquire(context.Background(), b)
			return g.Acquired
		}, "B could not take the key after the delayed restart")
		require.False(t, time.Now().Before(aValidUntil), "B got the key while A's lease was valid")
	})
}
