package throttle_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/faultproxy"
	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// replayConfig is the config of the Replay tests: answers kept a minute,
// duplicates waiting up to wait.
func replayConfig(name string, wait time.Duration) throttle.ReplayConfig {
	return throttle.ReplayConfig{Name: name, TTL: time.Minute, Wait: wait}
}

// notifiedReplay returns a Replay whose waits are woken by notifications
// only: its backoff sleeps an hour (set through a test hook: ReplayConfig
// has no Backoff), so a waiter that is not told of a record or a release
// runs into its Wait instead.
func notifiedReplay(t testing.TB, st store.Store, c throttle.ReplayConfig) *throttle.Replay {
	t.Helper()
	r := newReplay(t, st, c)
	r.SetBackoff(func(int) time.Duration { return time.Hour })
	return r
}

// TestClaim walks a key through its life: the first claim holds it, a
// duplicate finds it held with no record yet, then the record, and a
// release frees it with its record.
func TestClaim(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			r := notifiedReplay(t, b.store, replayConfig("claim", -1))
			lease, rec, err := r.Claim(ctx, "u")
			require.NoError(t, err, "first claim")
			require.NotNil(t, lease, "first claim")
			require.Nil(t, rec, "first claim")
			_, _, err = r.Claim(ctx, "u")
			isOnly(t, err, throttle.ErrContended)

			require.NoError(t, lease.Record(ctx, []byte("answer")))
			for range 2 {
				dup, rec, err := r.Claim(ctx, "u")
				require.NoError(t, err, "duplicate")
				require.Nil(t, dup, "duplicate")
				require.Equal(t, "answer", string(rec), "duplicate")
			}
			// Another identity has nothing to do with it.
			other, rec, err := r.Claim(ctx, "v")
			require.NoError(t, err, "other identity")
			require.NotNil(t, other, "other identity")
			require.Nil(t, rec, "other identity")
			_ = other.Release(ctx)

			require.NoError(t, lease.Release(ctx))
			require.ErrorIs(t, lease.Record(ctx, []byte("late")), throttle.ErrNotHeld, "record after release")
			next, rec, err := r.Claim(ctx, "u")
			require.NoError(t, err, "claim after release")
			require.NotNil(t, next, "claim after release")
			require.Nil(t, rec, "claim after release: the record must go with the key")
			_ = next.Release(ctx)
		})
	}
}

// TestClaimEmptyRecord: an empty record is a record, not "none yet".
func TestClaimEmptyRecord(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			r := notifiedReplay(t, b.store, replayConfig("empty", -1))
			lease, _, err := r.Claim(ctx, "u")
			require.NoError(t, err)
			defer lease.Release(ctx)
			require.NoError(t, lease.Record(ctx, nil))
			_, rec, err := r.Claim(ctx, "u")
			require.NoError(t, err, "duplicate")
			require.NotNil(t, rec, "duplicate: want an empty record")
			require.Empty(t, rec, "duplicate: want an empty record")
		})
	}
}

// TestClaimWokenByRecord: a duplicate waiting for an original in flight is
// woken by the record itself. Its backoff sleeps an hour, so without the
// store's notification it would run into its Wait and get ErrContended.
func TestClaimWokenByRecord(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			r := notifiedReplay(t, b.store, replayConfig("woken", 15*time.Second))
			lease, _, err := r.Claim(ctx, "u")
			require.NoError(t, err)
			defer lease.Release(ctx)
			type answer struct {
				rec []byte
				err error
			}
			got := make(chan answer, 1)
			go func() {
				_, rec, err := r.Claim(ctx, "u")
				got <- answer{rec, err}
			}()
			time.Sleep(100 * time.Millisecond) // let it start waiting (either way it must get the record)
			require.NoError(t, lease.Record(ctx, []byte("order 7")))
			a := <-got
			require.NoError(t, a.err, "waiting duplicate")
			require.Equal(t, "order 7", string(a.rec), "waiting duplicate: want the record")
		})
	}
}

// TestClaimOneRerunsAfterFailure: the original releases (it failed) while
// ten duplicates wait; exactly one of them gets the key, and the other nine
// get the record it writes.
func TestClaimOneRerunsAfterFailure(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			r := notifiedReplay(t, b.store, replayConfig("rerun", 15*time.Second))
			first, _, err := r.Claim(ctx, "u")
			require.NoError(t, err)
			const n = 10
			var (
				mu     sync.Mutex
				leases int
				recs   []string
				errs   []error
				wg     sync.WaitGroup
			)
			for range n {
				wg.Go(func() {
					lease, rec, err := r.Claim(ctx, "u")
					if lease != nil {
						// The rerun: it succeeds this time, and keeps
						// the key for the TTL, as Replay does.
						assert.NoError(t, lease.Record(ctx, []byte("second run")))
					}
					mu.Lock()
					defer mu.Unlock()
					switch {
					case lease != nil:
						leases++
					case err != nil:
						errs = append(errs, err)
					default:
						recs = append(recs, string(rec))
					}
				})
			}
			time.Sleep(100 * time.Millisecond) // let them start waiting
			require.NoError(t, first.Release(ctx))
			wg.Wait()
			require.Empty(t, errs)
			require.Equal(t, 1, leases, "leases")
			require.Len(t, recs, n-1, "records")
			for _, rec := range recs {
				require.Equal(t, "second run", rec)
			}
		})
	}
}

// TestClaimWaitBounds: the wait ends with ErrContended at ReplayConfig.Wait,
// and with the context's error when that ends first.
func TestClaimWaitBounds(t *testing.T) {
	ctx := context.Background()
	r := notifiedReplay(t, memstore.New(), replayConfig("bounds", 50*time.Millisecond))
	lease, _, err := r.Claim(ctx, "u")
	require.NoError(t, err)
	defer lease.Release(ctx)
	_, _, err = r.Claim(ctx, "u")
	isOnly(t, err, throttle.ErrContended)

	r = notifiedReplay(t, memstore.New(), replayConfig("bounds2", time.Hour))
	lease2, _, err := r.Claim(ctx, "u")
	require.NoError(t, err)
	defer lease2.Release(ctx)
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, _, err = r.Claim(cctx, "u")
	isOnly(t, err, context.DeadlineExceeded)
}

// noRecords hides a store's Recorder.
type noRecords struct{ store.Store }

// TestReplayStores checks that NewReplay refuses stores that keep no
// records, the Fallback's under FailOver included (its defaults are in
// TestReplayDefaults).
func TestReplayStores(t *testing.T) {
	mem := memstore.New()
	assert.Equal(t, "replay", throttle.ModeReplay.String())
	for name, c := range map[string]struct {
		st store.Store
		c  throttle.ReplayConfig
	}{
		"no recorder": {noRecords{mem}, throttle.ReplayConfig{Name: "r"}},
		"fallback no recorder": {mem, throttle.ReplayConfig{Name: "r",
			Options: throttle.Options{WhenStoreFails: throttle.FailOver, Fallback: noRecords{memstore.New()}}}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := throttle.NewReplay(c.st, c.c)
			isOnly(t, err, store.ErrInvalid)
			require.ErrorContains(t, err, "store.Recorder")
		})
	}
}

// TestClaimStoreFaults produces faults against a real Redis and checks
// Replay's promise: it fails closed by default (a retried order must not
// run unguarded), a record that cannot be written leaves the key held with
// nothing to replay (the duplicate waits and gets ErrContended, never a
// second run and never another answer), and a Redis that loses its data
// loses the record with the lock: the next request runs afresh.
func TestClaimStoreFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("needs redis-server")
	}
	ctx := context.Background()
	srv := redistest.Start(t)
	proxy := faultproxy.Start(t, srv.Addr)
	client := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	st := redisstore.New(client)
	t.Cleanup(func() { _ = st.Close() })
	c := replayConfig("faults", -1)
	c.Timeout = 100 * time.Millisecond
	c.Logger = quiet
	r := notifiedReplay(t, st, c)

	// Fail closed: nothing runs while Redis does not answer.
	proxy.SetBlackHole(true)
	lease, rec, err := r.Claim(ctx, "a")
	isOnly(t, err, throttle.ErrStore)
	require.Nil(t, lease, "black hole")
	require.Nil(t, rec, "black hole")
	proxy.Clear()

	// The record is lost on the way: the key stays held, unanswered.
	lease, _, err = r.Claim(ctx, "b")
	require.NoError(t, err)
	proxy.SetBlackHole(true)
	require.ErrorIs(t, lease.Record(ctx, []byte("ok")), throttle.ErrStore, "record through a black hole")
	proxy.Clear()
	dup, rec, err := r.Claim(ctx, "b")
	isOnly(t, err, throttle.ErrContended)
	require.Nil(t, dup, "after a lost record")
	require.Nil(t, rec, "after a lost record")
	require.NoError(t, lease.Release(ctx), "the key whose record was lost")

	// A recorded answer is replayed only to its own key.
	lease, _, err = r.Claim(ctx, "c")
	require.NoError(t, err)
	require.NoError(t, lease.Record(ctx, []byte("c's order")))
	other, rec, err := r.Claim(ctx, "d")
	require.NoError(t, err, "another key")
	require.NotNil(t, other, "another key")
	require.Nil(t, rec, "another key")
	require.NoError(t, other.Release(ctx), "another key")

	// Redis restarts empty: the record is gone with the lock.
	srv.Kill(t)
	_, _, err = r.Claim(ctx, "c")
	isOnly(t, err, throttle.ErrStore)
	srv.Restart(t)
	require.True(t, waitFor(10*time.Second, func() bool {
		next, rec, err := r.Claim(ctx, "c")
		if err == nil {
			require.NotNil(t, next, "after the restart: want the key afresh")
			require.Nil(t, rec, "after the restart: want no record")
			require.NoError(t, next.Release(ctx), "after the restart")
		}
		return err == nil
	}), "the store did not come back")
}

// TestReplayLease: the in-flight mark's lease defaults to 10 s, or the TTL
// when that is shorter, and must lie between 3 ms and the TTL.
func TestReplayLease(t *testing.T) {
	for c, want := range map[throttle.ReplayConfig]time.Duration{
		{Name: "r"}:                                     5 * time.Second,
		{Name: "r", TTL: 24 * time.Hour}:                10 * time.Second,
		{Name: "r", TTL: time.Hour, Lease: time.Hour}:   time.Hour,
		{Name: "r", TTL: time.Hour, Lease: time.Second}: time.Second,
	} {
		assert.Equal(t, want, newReplay(t, memstore.New(), c).Config().Lease, "%+v", c)
	}
	for _, c := range []throttle.ReplayConfig{
		{Name: "r", Lease: -time.Second},
		{Name: "r", Lease: 2 * time.Millisecond},
		{Name: "r", TTL: time.Minute, Lease: time.Minute + 1},
	} {
		_, err := throttle.NewReplay(memstore.New(), c)
		isOnly(t, err, store.ErrInvalid)
	}
}
