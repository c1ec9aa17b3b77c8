package throttle_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// TestKeysOfJobsNeverMeet runs a Lock, a Quota and a Replay of one name in
// three "processes" (three stores on one Redis, which no registry can see
// as one) and checks that none touches another's keys: the quota decides
// on a held lock's id (before: "ERR quota key holds no TAT", and so failed
// open), a rate named "fence" leaves the lock's fencing counter alone, a
// quota's reset frees no lock, a Replay's claim does not find the lock's
// key held, and a lock's reset leaves the Replay's record.
func TestKeysOfJobsNeverMeet(t *testing.T) {
	if testing.Short() {
		t.Skip("needs redis-server")
	}
	srv := redistest.Start(t)
	ctx := context.Background()
	rdb := newClient(srv.Addr)
	t.Cleanup(func() { _ = rdb.Close() })
	newStore := func() store.Store {
		st := redisstore.New(rdb)
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	one, two := newStore(), newStore()
	fail := throttle.Options{WhenStoreFails: throttle.FailClosed}
	lock := newLock(t, one, throttle.LockConfig{Name: "shared", Fence: true, TTL: time.Minute, Options: fail})
	quota := newQuota(t, two, throttle.QuotaConfig{Name: "shared"}) // fails open

	lease, err := lock.Acquire(ctx, "u")
	require.NoError(t, err)
	fenceKey := storekit.FenceKey(lock.StoredKey("u"))
	fence, err := rdb.Get(ctx, fenceKey).Result()
	require.NoError(t, err)

	plain := throttle.Rate{Limit: 10, Window: time.Minute}
	d, err := quota.Admit(ctx, "u", plain, 1)
	require.NoError(t, err)
	require.NotNil(t, d, "a quota on the id of a held lock of its name failed open")
	require.True(t, d.Allowed)
	named := throttle.Rate{Name: "fence", Limit: 2, Window: time.Hour}
	for _, r := range [][]throttle.Rate{{named}, {plain, named}} {
		ds, err := quota.AllowAll(ctx, "u", r, 1)
		require.NoError(t, err, "rates %v", r)
		require.True(t, ds[0].Allowed)
	}
	require.NoError(t, quota.Reset(ctx, "u"), "a quota's reset")
	require.NoError(t, quota.Reset(ctx, "u", named))
	got, err := rdb.Get(ctx, fenceKey).Result()
	require.NoError(t, err)
	require.Equal(t, fence, got, "the lock's fencing counter after a quota's rate named fence")
	require.NoError(t, lease.Release(ctx), "the lock after a quota's reset")
	_, err = lock.Acquire(ctx, "u")
	require.NoError(t, err)

	replay := newReplay(t, newStore(), throttle.ReplayConfig{Name: "shared", Wait: -1, Options: fail})
	claim, rec, err := replay.Claim(ctx, "u")
	require.NoError(t, err, "a Replay on the id of a held lock of its name")
	require.Nil(t, rec)
	require.NoError(t, claim.Record(ctx, []byte("answer")))
	require.NoError(t, lock.Reset(ctx, "u"), "a lock's reset")
	_, rec, err = replay.Claim(ctx, "u")
	require.NoError(t, err)
	require.Equal(t, "answer", string(rec), "a lock's reset deleted the Replay's record")
}

// TestNameIsOnePolicy checks that a name reused on one store and prefix
// for another kind of policy, or keys kept otherwise, is refused where it
// is made, and that the same policy built twice (or by a caller that waits
// or fails otherwise), or the name on another store or prefix, is not.
func TestNameIsOnePolicy(t *testing.T) {
	st := memstore.New()
	lock := newLock(t, st, throttle.LockConfig{Name: "n"})
	refused := map[string]func() error{
		"quota":  func() error { _, err := throttle.NewQuota(st, throttle.QuotaConfig{Name: "n"}); return err },
		"replay": func() error { _, err := throttle.NewReplay(st, throttle.ReplayConfig{Name: "n"}); return err },
		"exclusive": func() error {
			_, err := throttle.NewLock(st, throttle.LockConfig{Name: "n", Mode: throttle.Exclusive})
			return err
		},
		"ttl": func() error {
			_, err := throttle.NewLock(st, throttle.LockConfig{Name: "n", TTL: time.Minute})
			return err
		},
		"fence": func() error { _, err := throttle.NewLock(st, throttle.LockConfig{Name: "n", Fence: true}); return err },
		"reentrant": func() error {
			_, err := throttle.NewLock(st, throttle.LockConfig{Name: "n", Reentrant: true})
			return err
		},
	}
	for name, make := range refused {
		err := make()
		require.ErrorIs(t, err, store.ErrInvalid, "%s: a second policy named n", name)
		require.ErrorContains(t, err, `policy "n"`, name)
	}
	// The same keys, as another caller waits for them, fails and reports.
	same := newLock(t, st, throttle.LockConfig{Name: "n", TTL: 5 * time.Second, Wait: time.Second, Holders: 1,
		Options: throttle.Options{Logger: slog.Default(), WhenStoreFails: throttle.FailClosed, DryRun: true}})
	require.Equal(t, lock.Config().TTL, same.Config().TTL)
	newQuota(t, st, throttle.QuotaConfig{Name: "n", Options: throttle.Options{Prefix: "other"}})
	newQuota(t, memstore.New(), throttle.QuotaConfig{Name: "n"})
	newQuota(t, st, throttle.QuotaConfig{Name: "m"})
	newQuota(t, st, throttle.QuotaConfig{Name: "m"})
}

// handle is another handle on a store, as another process has on one
// Redis: the names of one process are claimed per handle.
type handle struct{ store.Store }
