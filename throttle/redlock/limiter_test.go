package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

func newLock(t testing.TB, s store.Store, c throttle.LockConfig) *throttle.Lock {
	t.Helper()
	l, err := throttle.NewLock(s, c)
	require.NoError(t, err)
	return l
}

// TestLimiterModes runs the three modes' admission on a Redlock store, with
// two Locks on two Stores (two processes): the first request is
// admitted, a duplicate from either process is turned away with a
// Retry-After within the TTL, and the key is free again after the release.
func TestLimiterModes(t *testing.T) {
	ns := startNodes(t, 3, false)
	s1, s2 := ns.store(t), ns.store(t)
	ctx := context.Background()
	const ttl = 5 * time.Second
	for _, mode := range []throttle.Mode{throttle.Dedupe, throttle.Cooldown, throttle.Exclusive} {
		t.Run(mode.String(), func(t *testing.T) {
			c := throttle.LockConfig{Name: "rl-" + mode.String(), Mode: mode, TTL: ttl}
			l1, l2 := newLock(t, s1, c), newLock(t, s2, c)
			lease, err := l1.Admit(ctx, "user-1")
			require.NoError(t, err, "first Admit")
			require.NotNil(t, lease)
			// The lease must not outlive the quorum's validity, which is
			// at most TTL − drift (the Lock subtracts its own drift
			// from the Grant.TTL too).
			assert.Positive(t, lease.ValidFor())
			assert.LessOrEqual(t, lease.ValidFor(), ttl-storekit.Drift(ttl)-storekit.Drift(ttl-storekit.Drift(ttl)))
			key := storekit.Key("throttle", c.Name, "user-1")
			held := 0
			for i := range ns.srvs {
				if ns.holder(t, i, key) != "" {
					held++
				}
			}
			require.GreaterOrEqual(t, held, 2, "the admitted key is on a quorum of nodes")
			for name, l := range map[string]*throttle.Lock{"same process": l1, "other process": l2} {
				_, err := l.Admit(ctx, "user-1")
				var ce *throttle.ContendedError
				require.ErrorAs(t, err, &ce, "duplicate from the %s", name)
				assert.Positive(t, ce.RetryAfter)
				assert.LessOrEqual(t, ce.RetryAfter, ttl)
			}
			lease2, err := l2.Admit(ctx, "user-2")
			require.NoError(t, err, "another user")
			require.NotNil(t, lease2)
			require.NoError(t, lease.Release(ctx))
			lease, err = l2.Admit(ctx, "user-1")
			require.NoError(t, err, "Admit after the release")
			require.NotNil(t, lease)
		})
	}
}

// TestLimiterDoAcrossTTLs: Lock.Do on a Redlock store keeps the key for
// work that lasts several lease TTLs (KeepAlive extends it on a quorum),
// other processes are refused all along, and the key is free afterwards.
func TestLimiterDoAcrossTTLs(t *testing.T) {
	ns := startNodes(t, 3, false)
	// A lease refreshed every third of it: 1.5 s leaves a second of slack
	// for a loaded machine's scheduling (400 ms once did not).
	const leaseTTL = 1500 * time.Millisecond
	c := throttle.LockConfig{Name: "rl-job", Mode: throttle.Exclusive, TTL: leaseTTL}
	worker, other := newLock(t, ns.store(t), c), newLock(t, ns.store(t), c)
	ctx := context.Background()
	checks := 0
	err := worker.Do(ctx, "job-1", func(work context.Context) error {
		lease := throttle.LeaseFrom(work)
		for start := time.Now(); time.Since(start) < 4*leaseTTL; time.Sleep(leaseTTL / 4) {
			if err := context.Cause(work); err != nil {
				return err
			}
			assert.Positive(t, lease.ValidFor(), "lease validity while the work runs")
			// Refused, or, when a loaded machine makes nodes miss their
			// timeout, failed closed: never admitted.
			got, err := other.Acquire(ctx, "job-1")
			assert.Nil(t, got, "another process's Acquire while the job runs")
			if !errors.Is(err, throttle.ErrStore) {
				assert.ErrorIs(t, err, throttle.ErrContended, "another process's Acquire while the job runs")
			}
			checks++
		}
		return nil
	})
	require.NoError(t, err, "Do: the lease must survive %v of work", 4*leaseTTL)
	require.GreaterOrEqual(t, checks, 8, "the work's checks")
	lease, err := other.Acquire(ctx, "job-1")
	require.NoError(t, err, "Acquire after Do: the key is free")
	_ = lease.Release(ctx)
}

// TestLimiterRefusesFence: a Lock that asks for fencing tokens or
// reentrancy, or a Quota, gets ErrInvalid over a Redlock store, never a
// lease or a decision.
func TestLimiterRefusesFence(t *testing.T) {
	ns := startNodes(t, 3, false)
	s := ns.store(t)
	for name, c := range map[string]throttle.LockConfig{
		"fence":     {Name: "rl-fence", Fence: true, Options: throttle.Options{WhenStoreFails: throttle.FailClosed}},
		"reentrant": {Name: "rl-reentrant", Reentrant: true, Options: throttle.Options{WhenStoreFails: throttle.FailClosed}},
	} {
		t.Run(name, func(t *testing.T) {
			l, err := throttle.NewLock(s, c)
			if err != nil {
				require.ErrorIs(t, err, store.ErrInvalid, "throttle.NewLock")
				return // refused up front: better still
			}
			lease, err := l.Acquire(context.Background(), "u")
			require.ErrorIs(t, err, store.ErrInvalid)
			require.Nil(t, lease)
		})
	}
	t.Run("quota", func(t *testing.T) {
		q, err := throttle.NewQuota(s, throttle.QuotaConfig{Name: "rl-quota"})
		require.ErrorIs(t, err, store.ErrInvalid, "throttle.NewQuota accepted a Redlock store")
		require.Nil(t, q)
	})
}
