package redisstore_test

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// TestDialHungRedis: Redis is frozen (SIGSTOP) while two Locks with a
// 100 ms Timeout admit. The one on a store made by Dial fails as a store
// outage well within a generous deadline; the one on a client made the usual
// way, without ContextTimeoutEnabled, is still waiting at that deadline, as
// go-redis waits for its ReadTimeout (3 s) whatever the context says.
func TestDialHungRedis(t *testing.T) {
	const deadline = 2 * time.Second // 20 Timeouts, below the ReadTimeout
	srv := redistest.Start(t)
	ctx := context.Background()
	dialed, err := redisstore.Dial(ctx, &redis.UniversalOptions{Addrs: []string{srv.Addr}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = dialed.Close() })
	usual := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = usual.Close() })
	hangs := redisstore.New(usual, redisstore.WithLogger(slog.New(slog.DiscardHandler)))
	t.Cleanup(func() { _ = hangs.Close() })

	lock := func(s *redisstore.Store) *throttle.Lock {
		l, err := throttle.NewLock(s, throttle.LockConfig{Name: "dial", TTL: time.Minute,
			Options: throttle.Options{Timeout: 100 * time.Millisecond, WhenStoreFails: throttle.FailClosed}})
		require.NoError(t, err)
		_, err = l.Admit(ctx, storekit.NewToken())
		require.NoError(t, err, "warm-up Admit")
		return l
	}
	admit := func(l *throttle.Lock) chan error {
		done := make(chan error, 1)
		go func() { _, err := l.Admit(ctx, storekit.NewToken()); done <- err }()
		return done
	}
	ld, lh := lock(dialed), lock(hangs)
	srv.Pause(t)
	fast, slow := admit(ld), admit(lh)
	timeout := time.After(deadline)
	select {
	case err := <-fast:
		require.ErrorIs(t, err, throttle.ErrStore, "admission on Dial's store against a hung Redis")
	case <-timeout:
		require.Fail(t, "admission on Dial's store against a hung Redis took longer than "+deadline.String())
	}
	select {
	case err := <-slow:
		require.Fail(t, "a client without ContextTimeoutEnabled no longer waits for its ReadTimeout: "+
			"New's warning and this test are out of date", "%v", err)
	case <-timeout:
	}
	srv.Resume(t)
	<-slow //nolint:errcheck // the plain client's call ends once Redis resumes; its outcome does not matter
}

// TestDialOwnsClient: Dial refuses a Redis that does not answer; otherwise
// it dials the whole pool at once, and the store's Close closes the client.
func TestDialOwnsClient(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	srv.Stop(t)
	_, err := redisstore.Dial(ctx, &redis.UniversalOptions{Addrs: []string{srv.Addr}})
	require.Error(t, err, "Dial to a stopped Redis")
	srv.Restart(t)

	const pool = 4
	s, err := redisstore.Dial(ctx, &redis.UniversalOptions{Addrs: []string{srv.Addr}, PoolSize: pool})
	require.NoError(t, err)
	c := srv.Client(t)
	require.Eventually(t, func() bool { return connectedClients(t, c) == pool+1 }, 10*time.Second, 10*time.Millisecond,
		"connections: want the store's pool of %d and this test's", pool)
	require.NoError(t, s.Close())
	_, err = s.Acquire(ctx, store.Request{Key: key(t), Token: "t", TTL: time.Minute})
	require.ErrorIs(t, err, redis.ErrClosed, "Acquire after Close")
	require.Eventually(t, func() bool { return connectedClients(t, c) == 1 }, 10*time.Second, 10*time.Millisecond,
		"connections after Close")
}

// connectedClients returns how many clients c's server counts.
func connectedClients(t *testing.T, c *redis.Client) int {
	t.Helper()
	info, err := c.Info(context.Background(), "clients").Result()
	require.NoError(t, err)
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_clients:"); ok {
			n, err := strconv.Atoi(v)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("no connected_clients in INFO clients:\n%s", info)
	return 0
}
