package redisstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"

	"github.com/stretchr/testify/require"
)

// TestReplicaAckFailover shows, on a real Sentinel deployment, the failure
// WithReplicaAck guards against and that it does guard against it.
//
// Redis replicates asynchronously: a lock the master granted but had not
// yet sent to its replica is lost when the master dies and the sentinels
// promote the replica. To make "not yet sent" deterministic, the test
// freezes the replica (SIGSTOP) and has the master drop its replication
// connection (CLIENT KILL TYPE replica) before the acquisition: the write
// then exists only on the master, as if it had died with the write in its
// output buffer. (Pausing the replica alone is not enough: the master would
// still send the write into the replica's socket, and the replica would
// apply it on resuming.) Then the master is killed, the replica resumed, and
// the sentinels promote it by themselves: a real failover, not an emulated
// REPLICAOF NO ONE, taking one to a few seconds.
//
//   - without: the master grants the lock; after the failover a contender
//     is granted the same key while the first holder's lease is still
//     valid: two holders.
//   - with: under WithReplicaAck(1, 200ms) the same acquisition is not
//     reported as granted (ErrNotReplicated) and the key is freed again, so
//     no holder ever believed it held a lock the new master does not have.
//     Then, with replication restored, a grant is reported only once the
//     replica has it, and that lock survives the same kind of failover: a
//     contender is refused by the new master. The new master has no
//     replica left, so from then on the option refuses every grant.
func TestReplicaAckFailover(t *testing.T) {
	const ttl = time.Minute
	t.Run("without", func(t *testing.T) {
		t.Parallel()
		d := redistest.StartSentinel(t)
		s, _ := sentinelStore(t, d)
		master, replica := d.Master(), d.Replica()
		first := store.Request{Key: key(t), Token: storekit.NewToken(), TTL: ttl}

		cutReplication(t, master, replica)
		granted := time.Now()
		mustAcquire(t, s, first)
		require.True(t, exists(t, master, first.Key), "the grant is not on the master")
		failOverTo(t, d, master, replica)

		require.False(t, exists(t, replica, first.Key), "the promoted replica has the lock: replication was not cut, the test proves nothing")
		g, _ := acquireEventually(t, s, store.Request{Key: first.Key, Token: storekit.NewToken(), TTL: ttl})
		require.True(t, g.Acquired, "the contender was refused (%+v): the lock survived", g)
		if held := time.Since(granted); held >= ttl {
			t.Fatalf("the first lease had expired (%v) before the contender got the key", held)
		}
		t.Logf("two holders: the first lease is still valid for %v, and the new master granted the key again", ttl-time.Since(granted))
	})

	t.Run("with", func(t *testing.T) {
		t.Parallel()
		const timeout = 200 * time.Millisecond
		d := redistest.StartSentinel(t)
		s, _ := sentinelStore(t, d, redisstore.WithReplicaAck(1, timeout))
		contender, _ := sentinelStore(t, d) // without the option
		master, replica := d.Master(), d.Replica()
		// Warm up: the client has found the master and the scripts are
		// loaded, so that the cut below only affects replication.
		mustAcquire(t, s, store.Request{Key: key(t), Token: storekit.NewToken(), TTL: ttl})

		cutReplication(t, master, replica)
		refused := store.Request{Key: key(t), Token: storekit.NewToken(), TTL: ttl}
		start := time.Now()
		g, err := s.Acquire(context.Background(), refused)
		took := time.Since(start)
		if err == nil || g.Acquired || !errors.Is(err, redisstore.ErrNotReplicated) {
			t.Fatalf("an acquisition the replica never received = %+v, %v; want ErrNotReplicated", g, err)
		}
		if took < timeout {
			t.Fatalf("refused after %v, before the %v WAIT timeout", took, timeout)
		}
		require.False(t, exists(t, master, refused.Key), "the refused acquisition left the key held on the master")

		// Replication back: the replica reconnects and catches up.
		replica.Resume(t)
		redistest.WaitInSync(t, master, replica)
		kept := store.Request{Key: key(t), Token: storekit.NewToken(), TTL: ttl}
		mustAcquire(t, s, kept)
		// No WAIT of our own: the kill follows the grant at once.
		master.Kill(t)
		d.WaitForMaster(t, replica)

		require.True(t, exists(t, replica, kept.Key), "a grant confirmed by the replica is missing on the promoted replica")
		g, _ = acquireEventually(t, contender, store.Request{Key: kept.Key, Token: storekit.NewToken(), TTL: ttl})
		require.False(t, g.Acquired, "a contender got a lock that the replica had acknowledged: two holders")
		// The refused key was never reported as held: taking it now
		// gives no second holder.
		g, _ = acquireEventually(t, contender, store.Request{Key: refused.Key, Token: storekit.NewToken(), TTL: ttl})
		require.True(t, g.Acquired, "the refused key is held on the new master: %+v", g)
		// The price: the new master has no replica left, so the store
		// with the option grants nothing until one is back.
		_, err = s.Acquire(context.Background(), store.Request{Key: key(t), Token: storekit.NewToken(), TTL: ttl})
		require.True(t, errors.Is(err, redisstore.ErrNotReplicated), "an acquisition with no replica left = %v; want ErrNotReplicated", err)
	})
}

// cutReplication freezes replica and has master close its replication
// connection, so that what master writes next reaches no replica (the
// frozen replica cannot reconnect) until replica is resumed.
func cutReplication(t *testing.T, master, replica *redistest.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	replica.Pause(t)
	c := master.Client(t)
	if n, err := c.ClientKillByFilter(ctx, "TYPE", "replica").Result(); err != nil || n != 1 {
		t.Fatalf("CLIENT KILL TYPE replica = %d, %v; want one replica disconnected", n, err)
	}
	for {
		info, err := c.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "connected_slaves:0") {
			return
		}
		require.Nil(t, ctx.Err(), "the master still lists a replica: %q, %v", info, err)
		time.Sleep(5 * time.Millisecond)
	}
}

// failOverTo kills master, resumes the frozen replica and waits until the
// sentinels have promoted it.
func failOverTo(t *testing.T, d *redistest.Sentinel, master, replica *redistest.Server) {
	t.Helper()
	master.Kill(t)
	replica.Resume(t)
	start := time.Now()
	d.WaitForMaster(t, replica)
	t.Logf("sentinels promoted the replica %v after the kill", time.Since(start))
}
