package redisstore_test

import (
	"bytes"
	"context"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/throttle/redisstore"

	"github.com/stretchr/testify/require"
)

// hangDetector is how long a test lets Close or New run before it calls
// them hung. It is not a timing requirement: both return far sooner, and
// the bound only has to tell "returns" from "blocks for the client's
// timeouts" (about 5 s before the fix).
const hangDetector = 3 * time.Second

// closeReturns calls s.Close and fails the test when it has not returned
// after hangDetector.
func closeReturns(t *testing.T, s *redisstore.Store) error {
	t.Helper()
	got := make(chan error, 1)
	go func() { got <- s.Close() }()
	select {
	case err := <-got:
		return err
	case <-time.After(hangDetector):
		t.Fatalf("Close still blocked after %v", hangDetector)
		return nil
	}
}

// storeGoroutines returns the stacks of the goroutines running code of
// package redisstore (not of its tests).
func storeGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var found []string
	for g := range bytes.SplitSeq(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte("/throttle/redisstore.")) {
			found = append(found, string(g))
		}
	}
	return found
}

// noStoreGoroutines fails the test when goroutines of the store are still
// running 10 s from now (they normally are gone at once).
func noStoreGoroutines(t *testing.T) {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if left = storeGoroutines(); len(left) == 0 {
			return
		}
	}
	t.Fatalf("%d store goroutine(s) still running:\n%s", len(left), strings.Join(left, "\n\n"))
}

// TestCloseWhileRedisHangs: Close returns promptly and leaves no goroutine
// behind when Redis hangs (Pause, SIGSTOP: connections are accepted,
// nothing is answered), whatever the store's goroutines were doing. Before the fix
// Close waited about 5 s for a Pub/Sub reconnection in progress.
func TestCloseWhileRedisHangs(t *testing.T) {
	const watchTimeout = 200 * time.Millisecond
	ctx := context.Background()

	t.Run("subscribed", func(t *testing.T) {
		s, srv, _ := newStore(t, redisstore.WithWatchTimeout(watchTimeout))
		_, stop, err := s.Watch(ctx, key(t))
		require.NoError(t, err)
		defer stop()
		srv.Pause(t)
		require.NoError(t, closeReturns(t, s))
		noStoreGoroutines(t)
	})

	// The receiver is reconnecting (TCP is accepted, the handshake is
	// not answered) and holds go-redis's PubSub mutex meanwhile.
	t.Run("reconnecting", func(t *testing.T) {
		s, srv, _ := newStore(t, redisstore.WithWatchTimeout(watchTimeout))
		srv.Pause(t)
		if _, _, err := s.Watch(ctx, key(t)); err == nil {
			t.Fatal("Watch on a hung Redis succeeded")
		}
		require.NoError(t, closeReturns(t, s))
		noStoreGoroutines(t)
	})

	// The start-up check of maxmemory-policy is waiting for its answer.
	t.Run("start-up-check", func(t *testing.T) {
		srv := redistest.Start(t)
		c := srv.Client(t)
		srv.Pause(t)
		made := make(chan *redisstore.Store, 1)
		go func() { made <- redisstore.New(c, redisstore.WithWatchTimeout(watchTimeout)) }()
		var s *redisstore.Store
		select {
		case s = <-made:
		case <-time.After(hangDetector):
			t.Fatalf("New still blocked after %v with Redis hung", hangDetector)
		}
		require.NoError(t, closeReturns(t, s))
		noStoreGoroutines(t)
	})

	// A client without ContextTimeoutEnabled lets go-redis wait for its
	// ReadTimeout (3 s) in a handshake whatever the context says. Close
	// still returns after its own bound, possibly with an error, and the
	// goroutines end by themselves once go-redis gives up.
	t.Run("client-ignores-deadlines", func(t *testing.T) {
		srv := redistest.Start(t)
		c := redis.NewClient(&redis.Options{Addr: srv.Addr})
		t.Cleanup(func() { _ = c.Close() })
		quiet := slog.New(slog.DiscardHandler)
		s := redisstore.New(c, redisstore.WithWatchTimeout(watchTimeout), redisstore.WithLogger(quiet))
		t.Cleanup(func() { _ = s.Close() })
		<-redisstore.ConfigChecked(s)
		srv.Pause(t)
		if _, _, err := s.Watch(ctx, key(t)); err == nil {
			t.Fatal("Watch on a hung Redis succeeded")
		}
		err := closeReturns(t, s)
		t.Logf("Close: %v", err)
		noStoreGoroutines(t)
	})
}
