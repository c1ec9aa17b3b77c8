package rueidisstore_test

import (
	"context"
	"crypto/fips140"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/rueidisstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// fipsChild marks the run of this test binary that TestFIPS140Only starts.
const fipsChild = "THROTTLE_TEST_FIPS140_CHILD"

// TestFIPS140Only runs this test binary again under GODEBUG=fips140=only,
// which only a process's start reads, and which makes crypto/sha1 panic: the
// stores used to hash their scripts at init, so the binary died before any
// test. There both stores (go-redis and rueidis) must decide right on a
// server restarted in the middle, whose empty script cache answers EVALSHA
// with NOSCRIPT, on a server that refuses SCRIPT LOAD to their user, and on
// a Cluster whose other masters never saw a script.
func TestFIPS140Only(t *testing.T) {
	if os.Getenv(fipsChild) == "" {
		if testing.Short() {
			t.Skip("starts redis-server processes")
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestFIPS140Only$", "-test.v")
		cmd.Env = append(os.Environ(), "GODEBUG=fips140=only", fipsChild+"=1")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "the test binary under GODEBUG=fips140=only:\n%s", out)
		require.Contains(t, string(out), "--- PASS: TestFIPS140Only", "%s", out)
		return
	}
	require.True(t, fips140.Enabled(), "the child runs without GODEBUG=fips140=only")
	ctx := context.Background()

	t.Run("restarted", func(t *testing.T) {
		srv := redistest.Start(t)
		gc := srv.Client(t)
		for _, s := range []*redisstore.Store{redisstore.New(gc), rueidisstore.New(newClient(t, srv))} {
			t.Cleanup(func() { _ = s.Close() })
			// The first calls may meet connections a restart broke (rueidis
			// spreads keys over several): wait for 32 answers in a row.
			reach := func() {
				require.Eventually(t, func() bool {
					for range 32 {
						if _, _, err := s.Recorded(ctx, key(t)); err != nil {
							return false
						}
					}
					return true
				}, 10*time.Second, 10*time.Millisecond, "the store never reached the server")
			}
			reach()
			require.NoError(t, gc.ConfigResetStat(ctx).Err())
			decide(t, s, key(t))
			require.Zero(t, calls(t, gc, "eval"), "EVAL after SCRIPT LOAD")
			srv.Kill(t)
			srv.Restart(t)
			reach()
			decide(t, s, key(t))
			require.Positive(t, calls(t, gc, "eval"), "EVAL after NOSCRIPT")
		}
	})

	// An ACL (or a proxy) refuses SCRIPT LOAD: the stores send EVAL.
	t.Run("script-load-refused", func(t *testing.T) {
		srv := redistest.Start(t)
		gc := srv.Client(t)
		require.NoError(t, gc.Do(ctx, "acl", "setuser", "noload", "on", ">pw", "~*", "&*", "+@all", "-script|load").Err())
		limited := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "noload", Password: "pw", ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = limited.Close() })
		rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, Username: "noload", Password: "pw",
			DisableCache: true})
		require.NoError(t, err)
		t.Cleanup(rc.Close)
		for _, s := range []*redisstore.Store{redisstore.New(limited), rueidisstore.New(rc)} {
			t.Cleanup(func() { _ = s.Close() })
			require.NoError(t, gc.ConfigResetStat(ctx).Err())
			decide(t, s, key(t))
			require.Positive(t, calls(t, gc, "eval"), "EVAL after a refused SCRIPT LOAD")
		}
	})

	t.Run("cluster", func(t *testing.T) {
		cl := redistest.StartCluster(t, 3)
		rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: cl.Addrs, DisableCache: true})
		require.NoError(t, err)
		t.Cleanup(rc.Close)
		for _, s := range []*redisstore.Store{redisstore.New(cl.Client(t)), rueidisstore.New(rc)} {
			t.Cleanup(func() { _ = s.Close() })
			for _, m := range cl.Masters {
				require.NoError(t, cl.NodeClient(t, m).ScriptFlush(ctx).Err())
				require.NoError(t, cl.NodeClient(t, m).ConfigResetStat(ctx).Err())
			}
			// The first master gets SCRIPT LOAD, the others NOSCRIPT.
			for i, m := range cl.Masters {
				k := key(t)
				for cl.Owner(t, redistest.KeySlot(k)) != m {
					k = key(t)
				}
				decide(t, s, k)
				require.Equal(t, i > 0, calls(t, cl.NodeClient(t, m), "eval") > 0, "EVAL on master %d", i)
			}
		}
	})
}

// decide runs every kind of script call on key (and its record and quota
// siblings) and checks each answer.
func decide(t *testing.T, s *redisstore.Store, key string) {
	t.Helper()
	ctx := context.Background()
	mine := store.Request{Key: key, Token: storekit.NewToken(), TTL: time.Minute, Fence: true}
	g := mustAcquire(t, s, mine)
	require.Positive(t, g.Fence, "fence of %s", key)
	other := mine
	other.Token = storekit.NewToken()
	g, err := s.Acquire(ctx, other)
	require.NoError(t, err)
	require.False(t, g.Acquired, "a second token took %s", key)
	require.Positive(t, g.Remaining)
	for _, c := range []struct {
		op   func() (store.Outcome, error)
		want store.Outcome
	}{
		{func() (store.Outcome, error) { return s.Extend(ctx, key, mine.Token, 2*time.Minute) }, store.OK},
		{func() (store.Outcome, error) { return s.Record(ctx, key, mine.Token, []byte("done"), 2*time.Minute) }, store.OK},
		{func() (store.Outcome, error) { return s.Release(ctx, key, other.Token) }, store.HeldByOther},
		{func() (store.Outcome, error) { return s.Release(ctx, key, mine.Token) }, store.OK},
	} {
		out, err := c.op()
		require.NoError(t, err)
		require.Equal(t, c.want, out, "on %s", key)
	}
	rate := store.Rate{Limit: 1, Window: time.Hour, Burst: 1}
	for i, allowed := range []bool{true, false} {
		d, err := s.AllowN(ctx, key+":quota", rate, 1)
		require.NoError(t, err)
		require.Equal(t, allowed, d.Allowed, "charge %d of a quota of 1", i+1)
	}
	require.NoError(t, s.Delete(ctx, key))
}

// calls returns how often the server of c ran cmd since its start or
// CONFIG RESETSTAT.
func calls(t *testing.T, c *redis.Client, cmd string) int {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls="); ok {
			n, err := strconv.Atoi(v[:strings.IndexByte(v, ',')])
			require.NoError(t, err)
			return n
		}
	}
	return 0
}
