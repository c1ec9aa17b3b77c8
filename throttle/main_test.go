package throttle_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// helperEnv, when set in the environment, turns the test binary into a
// helper process for the cross-process tests (see runHelper) instead of
// running tests.
const helperEnv = "THROTTLE_TEST_HELPER"

// TestMain runs the helper process when asked to, and otherwise the tests,
// checking afterwards that none of them leaked a goroutine (refreshers,
// waiters, pub/sub subscriptions).
func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	goleak.VerifyTestMain(m)
}

// runHelper is the body of a helper process; its exit status is the
// process's.
func runHelper(mode string) int {
	var err error
	switch mode {
	case "holder":
		err = runHolder()
	case "fencer":
		err = runFencer()
	case "quota":
		err = runQuota()
	case "replayer":
		err = runReplayer()
	default:
		err = fmt.Errorf("unknown helper mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	return 0
}

// backend is one store the job tests run against. rdb and srv are nil for
// the memory store.
type backend struct {
	name  string
	store store.Store
	srv   *redistest.Server
	rdb   *redis.Client
}

// backends returns a fresh memory store and a Redis store on a redis-server
// of the test's own; under -short only the memory store, so that the quick
// run still covers the memory half of each test.
func backends(t *testing.T) []backend {
	t.Helper()
	if testing.Short() {
		return []backend{memBackend(t)}
	}
	return []backend{memBackend(t), redisBackend(t)}
}

func memBackend(t testing.TB) backend {
	return backend{name: "memstore", store: memstore.New()}
}

func redisBackend(t testing.TB) backend {
	t.Helper()
	srv := redistest.Start(t)
	rdb := newClient(srv.Addr)
	t.Cleanup(func() { _ = rdb.Close() })
	store := redisstore.New(rdb)
	t.Cleanup(func() { _ = store.Close() })
	return backend{name: "redis", store: store, srv: srv, rdb: rdb}
}

// newClient returns a client for addr whose calls end at their context's
// deadline (Options.Timeout), as redisstore asks.
func newClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
}

// held reports whether key is held in b, looking at Redis directly when it
// can, and otherwise by trying to take it with a fresh token.
func (b backend) held(t *testing.T, key string) bool {
	t.Helper()
	ctx := context.Background()
	if b.rdb != nil {
		n, err := b.rdb.Exists(ctx, key).Result()
		require.NoError(t, err, "EXISTS %s", key)
		return n == 1
	}
	g, err := b.store.Acquire(ctx, store.Request{Key: key, Token: storekit.NewToken(), TTL: time.Millisecond})
	require.NoError(t, err, "probe acquire %s", key)
	if g.Acquired {
		// Leave nothing behind for the rest of the test.
		time.Sleep(2 * time.Millisecond)
	}
	return !g.Acquired
}

// newLock returns a Lock or fails the test.
func newLock(t testing.TB, st store.Store, c throttle.LockConfig) *throttle.Lock {
	t.Helper()
	l, err := throttle.NewLock(st, c)
	require.NoError(t, err, "throttle.NewLock(%+v)", c)
	return l
}

// newQuota returns a Quota or fails the test.
func newQuota(t testing.TB, st store.Store, c throttle.QuotaConfig) *throttle.Quota {
	t.Helper()
	q, err := throttle.NewQuota(st, c)
	require.NoError(t, err, "throttle.NewQuota(%+v)", c)
	return q
}

// newReplay returns a Replay or fails the test.
func newReplay(t testing.TB, st store.Store, c throttle.ReplayConfig) *throttle.Replay {
	t.Helper()
	r, err := throttle.NewReplay(st, c)
	require.NoError(t, err, "throttle.NewReplay(%+v)", c)
	return r
}

// waitFor polls cond every few milliseconds until it holds or limit passes,
// and reports whether it held. Tests use it with generous limits only.
func waitFor(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// isOnly checks that err matches want with errors.Is and none of the other
// sentinels, so that callers can branch on it unambiguously.
func isOnly(t *testing.T, err, want error) {
	t.Helper()
	all := []error{throttle.ErrContended, throttle.ErrStore, throttle.ErrLost, throttle.ErrNotHeld,
		store.ErrInvalid, context.Canceled, context.DeadlineExceeded}
	require.ErrorIs(t, err, want, "error %v (%T)", err, err)
	for _, other := range all {
		if other != want {
			require.NotErrorIs(t, err, other, "error %v matches %v as well as %v", err, other, want)
		}
	}
}
