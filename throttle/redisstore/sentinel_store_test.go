package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"
	"github.com/go-throttle/throttle/throttle/storetest"
)

// TestSentinelConformance runs the shared store suite through a Sentinel
// failover client (master, replica, three sentinels): on SET NX alone, on
// the pipeline, on the acquire script, and with WithReplicaAck(1, 1s)
// (which holds plain acquisitions on the pipeline), under which every grant
// of the suite must also have reached the replica.
func TestSentinelConformance(t *testing.T) {
	d := redistest.StartSentinel(t)
	cases := []struct {
		name string
		path string // see redisstore.WithPath
		opts []redisstore.Option
	}{
		{"set", "set", nil},
		{"pipeline", "pipeline", nil},
		{"script", "script", nil},
		{"pipeline-ack", "store", []redisstore.Option{redisstore.WithReplicaAck(1, time.Second)}},
		{"script-ack", "script", []redisstore.Option{redisstore.WithReplicaAck(1, time.Second)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) store.Store {
				s, _ := sentinelStore(t, d, append(tc.opts, redisstore.WithPath(tc.path))...)
				return s
			})
		})
	}
}

// TestSentinelForcedFailover: across SENTINEL FAILOVER the store keeps its
// locks and keeps working. A lock taken with WithReplicaAck before the
// failover is still held on the new master (a contender is refused and its
// holder can release it there); new acquisitions are granted on the new
// master; and a fail-open Lock answers every request throughout,
// promptly, without turning any away.
func TestSentinelForcedFailover(t *testing.T) {
	d := redistest.StartSentinel(t)
	acked, _ := sentinelStore(t, d, redisstore.WithReplicaAck(1, time.Second))
	plain, _ := sentinelStore(t, d)
	ctx := context.Background()
	replica := d.Replica()

	held := store.Request{Key: key(t), Token: storekit.NewToken(), TTL: time.Minute}
	mustAcquire(t, acked, held)
	// WithReplicaAck reported the grant only once the replica had it.
	require.True(t, exists(t, replica, held.Key), "an acknowledged grant is not on the replica")

	l, err := throttle.NewLock(plain, throttle.LockConfig{Name: "forced", TTL: 500 * time.Millisecond,
		Options: throttle.Options{WhenStoreFails: throttle.FailOpen}})
	require.NoError(t, err)
	adm := startAdmitter(l)
	time.Sleep(100 * time.Millisecond)
	require.Same(t, replica, d.Failover(t), "Failover promoted another server than the replica %s", replica.Addr)
	// The sentinels have switched: the store reaches the new master.
	g, took := acquireEventually(t, plain, store.Request{Key: key(t), Token: storekit.NewToken(), TTL: time.Minute})
	require.True(t, g.Acquired, "a fresh key after the failover: %+v", g)
	t.Logf("first grant %v after the failover was reported", took)
	time.Sleep(100 * time.Millisecond)
	adm.finish(t, time.Second)
	leases, _ := adm.counts()
	require.NotZero(t, leases, "the Lock granted no lease at all")

	// The lock survived: the new master has it and refuses a contender.
	require.True(t, exists(t, replica, held.Key), "the lock taken before the failover is not on the new master")
	g, _ = acquireEventually(t, plain, store.Request{Key: held.Key, Token: storekit.NewToken(), TTL: time.Minute})
	require.False(t, g.Acquired, "a contender for the lock held across the failover got %+v; want refused", g)
	require.Positive(t, g.Remaining, "a contender for the lock held across the failover got %+v; want refused", g)
	mustOutcome(t, store.OK)(acked.Release(ctx, held.Key, held.Token))
	require.False(t, exists(t, replica, held.Key), "the release did not reach the new master")
	waitOrphansGone(t)
}

// TestSentinelKilledMaster: when the master process dies (SIGKILL), the
// sentinels promote the replica by themselves and the store works again
// within a generous bound, with no change on the client's side, while a
// Lock with the default fail-open policy answers every request promptly:
// unguarded (counted as failed open) during the outage, with leases
// before and after it.
func TestSentinelKilledMaster(t *testing.T) {
	d := redistest.StartSentinel(t)
	s, _ := sentinelStore(t, d)
	l, err := throttle.NewLock(s, throttle.LockConfig{Name: "killed", TTL: 500 * time.Millisecond})
	require.NoError(t, err)
	require.Equal(t, throttle.FailOpen, l.Config().WhenStoreFails, "the default policy fails %v, want open", l.Config().WhenStoreFails)
	master, replica := d.Master(), d.Replica()
	adm := startAdmitter(l)
	deadline := time.Now().Add(10 * time.Second)
	for leases, _ := adm.counts(); leases == 0; leases, _ = adm.counts() {
		require.False(t, time.Now().After(deadline), "no lease before the kill")
		time.Sleep(10 * time.Millisecond)
	}

	master.Kill(t)
	killed := time.Now()
	d.WaitForMaster(t, replica)
	promoted := time.Since(killed)
	g, took := acquireEventually(t, s, store.Request{Key: key(t), Token: storekit.NewToken(), TTL: time.Minute})
	require.True(t, g.Acquired, "a fresh key after the failover: %+v", g)
	t.Logf("replica promoted %v after the kill; the store granted again %v after that", promoted, took)
	leasesBefore, open := adm.counts()
	require.NotEqualValues(t, 0, open, "no request failed open: the test never saw the outage")
	// The Lock itself gets leases again, on the new master.
	deadline = time.Now().Add(failoverLimit)
	for leases, _ := adm.counts(); leases == leasesBefore; leases, _ = adm.counts() {
		require.False(t, time.Now().After(deadline), "the Lock got no lease after the failover")
		time.Sleep(10 * time.Millisecond)
	}
	adm.finish(t, time.Second)
	waitOrphansGone(t)
}
