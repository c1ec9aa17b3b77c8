package rueidisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"

	"github.com/stretchr/testify/require"
)

// TestWatchShares: ten waiters on one key share one subscription; a release
// wakes them all; once they stop, the server has no subscription left
// (rueidis alone would keep it for the connection's life).
func TestWatchShares(t *testing.T) {
	s, srv := newStore(t)
	gc := srv.Client(t)
	ctx := context.Background()
	k, tok := key(t), storekit.NewToken()
	mustAcquire(t, s, store.Request{Key: k, Token: tok, TTL: time.Minute})
	ch := k + ":released"

	var wakes []<-chan struct{}
	var stops []func()
	for range 10 {
		w, stop, err := s.Watch(ctx, k)
		require.NoError(t, err)
		wakes, stops = append(wakes, w), append(stops, stop)
	}
	if n := numsub(t, gc, ch); n != 1 {
		t.Fatalf("%d subscriptions for 10 waiters on one key, want 1", n)
	}
	if out, err := s.Release(ctx, k, tok); err != nil || out != store.OK {
		t.Fatalf("release: %v, %v", out, err)
	}
	for i, w := range wakes {
		select {
		case <-w:
		case <-time.After(10 * time.Second):
			t.Fatalf("waiter %d was not woken by the release", i)
		}
	}
	for _, stop := range stops {
		stop()
		stop() // idempotent
	}
	deadline := time.Now().Add(10 * time.Second)
	for numsub(t, gc, ch) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the subscription outlived its last waiter")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The key can be watched again at once.
	_, stop, err := s.Watch(ctx, k)
	require.NoError(t, err, "watch after the last waiter left")
	stop()
}

// TestWatchChurn: waiters come and go on a few keys; every Watch that
// returns is subscribed (a release then wakes it), whatever unsubscriptions
// of earlier waiters are still on their way.
func TestWatchChurn(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	keys := []string{key(t), key(t), key(t)}
	for i := range 60 {
		k := keys[i%len(keys)]
		tok := storekit.NewToken()
		mustAcquire(t, s, store.Request{Key: k, Token: tok, TTL: time.Minute})
		w, stop, err := s.Watch(ctx, k)
		require.NoError(t, err)
		if out, err := s.Release(ctx, k, tok); err != nil || out != store.OK {
			t.Fatalf("release: %v, %v", out, err)
		}
		select {
		case <-w:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: a confirmed watch missed the release", i)
		}
		stop()
	}
}

// TestWatchAfterClose: Close ends every watch and Watch fails afterwards,
// while the other calls go on.
func TestWatchAfterClose(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	k := key(t)
	_, stop, err := s.Watch(ctx, k)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	stop()
	if _, _, err := s.Watch(ctx, k); err == nil {
		t.Fatal("Watch after Close succeeded")
	}
	mustAcquire(t, s, store.Request{Key: k, Token: "t", TTL: time.Second})
}
