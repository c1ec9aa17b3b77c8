package redisstore_test

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"

	"github.com/stretchr/testify/require"

	"github.com/stretchr/testify/assert"
)

// logBuffer is a slog text handler's output, safe to read while the store
// logs.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines returns the logged lines that contain level ("level=WARN", say).
func (b *logBuffer) lines(level string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for l := range strings.SplitSeq(b.buf.String(), "\n") {
		if strings.Contains(l, level) {
			out = append(out, l)
		}
	}
	return out
}

// newLogger returns a logger of every level that writes to a logBuffer.
func newLogger() (*slog.Logger, *logBuffer) {
	b := &logBuffer{}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

// checkedStore makes a store on client that logs to a buffer, waits until
// its start-up check is over, and returns the buffer.
func checkedStore(t *testing.T, client redis.UniversalClient) (*redisstore.Store, *logBuffer) {
	t.Helper()
	log, buf := newLogger()
	s := redisstore.New(client, redisstore.WithLogger(log))
	t.Cleanup(func() { _ = s.Close() })
	select {
	case <-redisstore.ConfigChecked(s):
	case <-time.After(10 * time.Second):
		t.Fatal("start-up check not over after 10s")
	}
	return s, buf
}

// TestEvictionPolicy: the store logs one warning when Redis may evict keys
// (any maxmemory-policy but noeviction), naming the policy, and nothing
// under noeviction.
func TestEvictionPolicy(t *testing.T) {
	for _, tc := range []struct {
		policy string
		warn   bool
	}{
		{"allkeys-lru", true},
		{"volatile-ttl", true}, // evicts exactly the keys with a TTL: every lock
		{"noeviction", false},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			srv := redistest.Start(t, "--maxmemory-policy", tc.policy)
			_, buf := checkedStore(t, srv.Client(t))
			warnings := buf.lines("level=WARN")
			if !tc.warn {
				require.EqualValues(t, 0, len(warnings), "warned under %s: %q", tc.policy, warnings)
				return
			}
			require.EqualValues(t, 1, len(warnings), "%d warnings, want 1: %q", len(warnings), warnings)
			for _, want := range []string{"maxmemory-policy=" + tc.policy, "noeviction"} {
				assert.True(t, strings.Contains(warnings[0], want), "warning %q does not say %q", warnings[0], want)
			}
		})
	}
}

// TestEvictionPolicyConfigForbidden: where CONFIG is renamed away, as many
// managed Redis services do, the check is silent (one debug line at most)
// and the store works as usual.
func TestEvictionPolicyConfigForbidden(t *testing.T) {
	srv := redistest.Start(t, "--maxmemory-policy", "allkeys-lru", "--rename-command", "CONFIG", "")
	c := srv.Client(t)
	if err := c.ConfigGet(context.Background(), "maxmemory-policy").Err(); err == nil {
		t.Fatal("CONFIG GET still works: the test would prove nothing")
	}
	s, buf := checkedStore(t, c)
	if got := append(buf.lines("level=WARN"), buf.lines("level=ERROR")...); len(got) != 0 {
		t.Fatalf("logged %q", got)
	}
	require.EqualValues(t, 1, len(buf.lines("cannot check maxmemory-policy")), "the check did not run into the missing command: %q", buf.lines(""))
	ctx := context.Background()
	req := store.Request{Key: key(t), Token: storekit.NewToken(), TTL: time.Minute}
	mustAcquire(t, s, req)
	mustOutcome(t, store.OK)(s.Release(ctx, req.Key, req.Token))
}

// TestEvictionPolicyCluster: on a Cluster every master is asked, and the
// one warning names the masters that may evict.
func TestEvictionPolicyCluster(t *testing.T) {
	cc := startCluster(t)
	ctx := context.Background()
	var masters []string
	var mu sync.Mutex
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		masters = append(masters, c.Options().Addr)
		return nil
	})
	if err != nil || len(masters) < 2 {
		t.Fatalf("masters %v, %v", masters, err)
	}
	slices.Sort(masters)
	lru := masters[len(masters)-1] // one master only, not the first
	direct := redis.NewClient(&redis.Options{Addr: lru})
	t.Cleanup(func() { _ = direct.Close() })
	require.NoError(t, direct.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err())

	_, buf := checkedStore(t, cc)
	var warnings []string
	for _, l := range buf.lines("level=WARN") {
		if strings.Contains(l, "maxmemory-policy") {
			warnings = append(warnings, l)
		}
	}
	require.EqualValues(t, 1, len(warnings), "%d warnings, want 1: %q", len(warnings), warnings)
	if !strings.Contains(warnings[0], lru) || !strings.Contains(warnings[0], "allkeys-lru") {
		t.Fatalf("warning %q does not name %s and its policy", warnings[0], lru)
	}
	for _, m := range masters[:len(masters)-1] {
		require.False(t, strings.Contains(warnings[0], m), "warning %q names %s, which does not evict", warnings[0], m)
	}
}
