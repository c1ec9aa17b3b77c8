package redisstore_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"

	"github.com/stretchr/testify/require"

	"github.com/stretchr/testify/assert"
)

// TestTokenSafety: A's lease expires, B takes the key, A's late release and
// extend change nothing, and B still holds the key.
func TestTokenSafety(t *testing.T) {
	s, _, c := newStore(t)
	ctx := context.Background()
	for _, reentrant := range []bool{false, true} {
		k, a, b := key(t), storekit.NewToken(), storekit.NewToken()
		mustAcquire(t, s, store.Request{Key: k, Token: a, TTL: 20 * time.Millisecond, Reentrant: reentrant})
		deadline := time.Now().Add(5 * time.Second)
		for {
			g, err := s.Acquire(ctx, store.Request{Key: k, Token: b, TTL: time.Minute, Reentrant: reentrant})
			require.NoError(t, err)
			if g.Acquired {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("A's lease never expired")
			}
			time.Sleep(5 * time.Millisecond)
		}
		mustOutcome(t, store.HeldByOther)(s.Release(ctx, k, a))
		mustOutcome(t, store.HeldByOther)(s.Extend(ctx, k, a, time.Hour))
		if p, _ := c.PTTL(ctx, k).Result(); p > time.Minute {
			t.Fatalf("A's extend changed B's TTL to %v", p)
		}
		g, err := s.Acquire(ctx, store.Request{Key: k, Token: storekit.NewToken(), TTL: time.Second})
		require.NoError(t, err, "after A's late release the key is free: %+v, %v", g, err)
		require.False(t, g.Acquired, "after A's late release the key is free: %+v, %v", g, err)
		mustOutcome(t, store.OK)(s.Release(ctx, k, b))
		mustOutcome(t, store.Gone)(s.Release(ctx, k, b))
		mustOutcome(t, store.Gone)(s.Extend(ctx, k, b, time.Second))
	}
}

// TestOneWinner: 200 goroutines race for one key; exactly one gets it, and
// every loser is told how long the winner keeps it.
func TestOneWinner(t *testing.T) {
	s, _, _ := newStore(t)
	for _, req := range []store.Request{
		{TTL: time.Minute},
		{TTL: time.Minute, Fence: true},
		{TTL: time.Minute, Reentrant: true},
	} {
		req.Key = key(t)
		var winners atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make(chan error, 200)
		for range 200 {
			wg.Go(func() {
				r := req
				r.Token = storekit.NewToken()
				<-start
				g, err := s.Acquire(context.Background(), r)
				switch {
				case err != nil:
					errs <- err
				case g.Acquired:
					winners.Add(1)
				case g.Remaining <= 0 || g.Remaining > time.Minute:
					errs <- errors.New("loser got Remaining " + g.Remaining.String())
				}
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if n := winners.Load(); n != 1 {
			t.Fatalf("%+v: %d winners, want 1", req, n)
		}
	}
}

// TestReentrantHolds: holds count up and down, every re-entry refreshes the
// TTL, and the key is freed (and published) at zero.
func TestReentrantHolds(t *testing.T) {
	s, _, c := newStore(t)
	ctx := context.Background()
	k, owner := key(t), storekit.NewToken()
	req := store.Request{Key: k, Token: owner, TTL: time.Second, Reentrant: true}
	for i := 1; i <= 3; i++ {
		if g := mustAcquire(t, s, req); g.Holds != i {
			t.Fatalf("hold %d reported %d", i, g.Holds)
		}
	}
	req.TTL = time.Hour
	mustAcquire(t, s, req)
	if p, _ := c.PTTL(ctx, k).Result(); p < 59*time.Minute {
		t.Fatalf("re-entry did not refresh the TTL: %v", p)
	}
	// A plain acquisition of a reentrant key finds it held.
	if g, err := s.Acquire(ctx, store.Request{Key: k, Token: owner, TTL: time.Second}); err != nil || g.Acquired {
		t.Fatalf("plain acquire of a hash lock: %+v, %v", g, err)
	}
	for range 3 {
		mustOutcome(t, store.StillHeld)(s.Release(ctx, k, owner))
	}
	mustOutcome(t, store.OK)(s.Release(ctx, k, owner))
	if n, _ := c.Exists(ctx, k).Result(); n != 0 {
		t.Fatal("key survives its last release")
	}
}

// TestCancelledContext: a cancelled or expired context is an error, not a
// hang and not a grant.
func TestCancelledContext(t *testing.T) {
	s, _, _ := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := store.Request{Key: key(t), Token: storekit.NewToken(), TTL: time.Second}
	if _, err := s.Acquire(ctx, req); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire with cancelled context: %v", err)
	}
	req.Fence = true
	if _, err := s.Acquire(ctx, req); !errors.Is(err, context.Canceled) {
		t.Fatalf("scripted Acquire with cancelled context: %v", err)
	}
	if _, err := s.Release(ctx, req.Key, req.Token); !errors.Is(err, context.Canceled) {
		t.Fatalf("Release with cancelled context: %v", err)
	}
	if _, _, err := s.Watch(ctx, req.Key); !errors.Is(err, context.Canceled) {
		t.Fatalf("Watch with cancelled context: %v", err)
	}
}

// TestOutage: with Redis stopped or killed every call returns an error
// before its context's deadline (plus slack for a loaded machine) instead of
// hanging, and the store works again once Redis is back on the same port.
func TestOutage(t *testing.T) {
	s, srv, _ := newStore(t)
	for _, kill := range []bool{false, true} {
		if kill {
			srv.Kill(t)
		} else {
			srv.Stop(t)
		}
		calls := map[string]func(ctx context.Context) error{
			"acquire": func(ctx context.Context) error {
				_, err := s.Acquire(ctx, store.Request{Key: key(t), Token: "t", TTL: time.Second})
				return err
			},
			"acquire-fenced": func(ctx context.Context) error {
				_, err := s.Acquire(ctx, store.Request{Key: key(t), Token: "t", TTL: time.Second, Fence: true})
				return err
			},
			"release": func(ctx context.Context) error { _, err := s.Release(ctx, key(t), "t"); return err },
			"extend": func(ctx context.Context) error {
				_, err := s.Extend(ctx, key(t), "t", time.Second)
				return err
			},
			"watch": func(ctx context.Context) error {
				_, stop, err := s.Watch(ctx, key(t))
				if err == nil {
					stop()
				}
				return err
			},
		}
		for name, call := range calls {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			done := make(chan error, 1)
			go func() { done <- call(ctx) }()
			select {
			case err := <-done:
				assert.NotNil(t, err, "%s with Redis down succeeded", name)
			case <-time.After(10 * time.Second):
				t.Fatalf("%s with Redis down hangs", name)
			}
			cancel()
		}
		srv.Restart(t)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		k := key(t)
		mustAcquire(t, s, store.Request{Key: k, Token: "t", TTL: time.Second, Fence: true})
		mustOutcome(t, store.OK)(s.Release(ctx, k, "t"))
		// Watch works again too: go-redis reconnects the shared
		// connection.
		waitWatch(t, s, k)
		cancel()
	}
}

// waitWatch retries Watch until it succeeds (the shared Pub/Sub connection
// may still be backing off after an outage), checks that a release wakes
// it, and stops it.
func waitWatch(t *testing.T, s interface {
	store.Store
	store.Notifier
}, k string) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for {
		wake, stop, err := s.Watch(ctx, k)
		if err == nil {
			defer stop()
			tok := storekit.NewToken()
			mustAcquire(t, s, store.Request{Key: k, Token: tok, TTL: time.Minute})
			mustOutcome(t, store.OK)(s.Release(ctx, k, tok))
			select {
			case <-wake:
				return
			case <-time.After(10 * time.Second):
				t.Fatal("release did not wake the watcher")
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("Watch never recovered: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
