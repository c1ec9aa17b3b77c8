package redisstore_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// numSub returns how many subscribers Redis counts on key's release channel.
func numSub(t *testing.T, c *redis.Client, key string) int64 {
	t.Helper()
	ch := key + ":released"
	m, err := c.PubSubNumSub(context.Background(), ch).Result()
	require.NoError(t, err)
	return m[ch]
}

// pubSubConns counts the server's clients in Pub/Sub mode (flag P).
func pubSubConns(t *testing.T, c *redis.Client) int {
	t.Helper()
	list, err := c.ClientList(context.Background()).Result()
	require.NoError(t, err)
	n := 0
	for line := range strings.SplitSeq(strings.TrimSpace(list), "\n") {
		for f := range strings.FieldsSeq(line) {
			if v, ok := strings.CutPrefix(f, "flags="); ok && strings.Contains(v, "P") {
				n++
			}
		}
	}
	return n
}

// eventually polls cond for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		require.False(t, time.Now().After(deadline), "not after 10s: %s", what)
		time.Sleep(5 * time.Millisecond)
	}
}

// TestWatchShared: many waiters on many keys share one Pub/Sub connection
// with one subscription per key; a release wakes exactly the waiters of its
// key; the subscription goes when the last waiter of the key stops.
func TestWatchShared(t *testing.T) {
	s, _, c := newStore(t)
	ctx := context.Background()
	const keys, perKey = 5, 4
	type waiter struct {
		key  string
		wake <-chan struct{}
		stop func()
	}
	var ws []waiter
	var names []string
	for i := range keys {
		k := key(t) + fmt.Sprint(i)
		names = append(names, k)
		for range perKey {
			wake, stop, err := s.Watch(ctx, k)
			require.NoError(t, err)
			ws = append(ws, waiter{k, wake, stop})
		}
	}
	require.Equal(t, 1, pubSubConns(t, c), "Pub/Sub connections for %d watches", keys*perKey)
	for _, k := range names {
		require.EqualValues(t, 1, numSub(t, c, k), "subscribers of %s", k)
	}

	// Release names[0]: its waiters wake, the others do not.
	tok := storekit.NewToken()
	mustAcquire(t, s, store.Request{Key: names[0], Token: tok, TTL: time.Minute})
	mustOutcome(t, store.OK)(s.Release(ctx, names[0], tok))
	for _, w := range ws {
		if w.key != names[0] {
			continue
		}
		select {
		case <-w.wake:
		case <-time.After(10 * time.Second):
			require.Fail(t, "a waiter of the released key was not woken")
		}
	}
	// The other keys' waiters got nothing. PUBLISH replies after the
	// message went out, and a later message on names[0] proves the
	// receiver handled the first one already.
	mustAcquire(t, s, store.Request{Key: names[0], Token: tok, TTL: time.Minute})
	mustOutcome(t, store.OK)(s.Release(ctx, names[0], tok))
	<-ws[0].wake
	for _, w := range ws {
		if w.key == names[0] {
			continue
		}
		select {
		case <-w.wake:
			require.Failf(t, "woken by another key's release", "waiter of %s woken by a release of %s", w.key, names[0])
		default:
		}
	}

	// A release that does not free the key (held by another, still held)
	// wakes nobody.
	owner := storekit.NewToken()
	reReq := store.Request{Key: names[1], Token: owner, TTL: time.Minute, Reentrant: true}
	mustAcquire(t, s, reReq)
	mustAcquire(t, s, reReq)
	mustOutcome(t, store.StillHeld)(s.Release(ctx, names[1], owner))
	mustOutcome(t, store.HeldByOther)(s.Release(ctx, names[1], tok))
	mustOutcome(t, store.OK)(s.Release(ctx, names[1], owner))
	var woken int
	for _, w := range ws {
		if w.key != names[1] {
			continue
		}
		select {
		case <-w.wake:
			woken++
		case <-time.After(10 * time.Second):
			require.Fail(t, "the last reentrant release did not wake")
		}
		select {
		case <-w.wake:
			require.Fail(t, "a release that freed nothing woke a waiter")
		default:
		}
	}

	// Stopping all but one waiter of a key keeps its subscription; the
	// last stop drops it. stop is idempotent.
	for i, w := range ws {
		if w.key == names[2] && i%perKey != 0 {
			w.stop()
			w.stop()
		}
	}
	require.EqualValues(t, 1, numSub(t, c, names[2]), "subscription dropped while a waiter remains")
	for _, w := range ws {
		w.stop()
	}
	for _, k := range names {
		eventually(t, "unsubscribed from "+k, func() bool { return numSub(t, c, k) == 0 })
	}
}

// TestWatchChurn: waiters come and go on the same keys concurrently; when
// they are done no subscription is left, and a fresh watch still works.
func TestWatchChurn(t *testing.T) {
	s, _, c := newStore(t)
	ctx := context.Background()
	k := key(t)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			for range 20 {
				_, stop, err := s.Watch(ctx, k+fmt.Sprint(i%3))
				if !assert.NoError(t, err, "Watch") {
					return
				}
				stop()
			}
		})
	}
	wg.Wait()
	for i := range 3 {
		eventually(t, "no subscription left", func() bool { return numSub(t, c, k+fmt.Sprint(i)) == 0 })
	}
	waitWatch(t, s, k+"0")
}

// TestLimiterHandOver: a Lock that waits for a held key is woken by the
// holder's release through Watch, long before its backoff would retry.
func TestLimiterHandOver(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	l, err := throttle.NewLock(s, throttle.LockConfig{
		Name: "handover", TTL: time.Minute, Wait: 30 * time.Second,
		// Without the notification the waiter would sleep 20 s.
		Backoff: func(int) time.Duration { return 20 * time.Second },
	})
	require.NoError(t, err)
	held, err := l.Acquire(ctx, "job")
	require.NoError(t, err)
	got := make(chan error, 1)
	go func() {
		lease, err := l.Acquire(ctx, "job")
		if err == nil {
			err = lease.Release(ctx)
		}
		got <- err
	}()
	// Let the waiter subscribe, then release.
	time.Sleep(200 * time.Millisecond)
	require.NoError(t, held.Release(ctx))
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		require.Fail(t, "waiter not woken by the release")
	}
}

// TestWatchAfterClose: Close ends the shared connection and its goroutines
// (goleak checks), open watches are left alone, and Watch fails afterwards
// while the store keeps serving locks.
func TestWatchAfterClose(t *testing.T) {
	s, _, c := newStore(t)
	ctx := context.Background()
	k := key(t)
	_, stop, err := s.Watch(ctx, k)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "second Close")
	stop()
	_, _, err = s.Watch(ctx, k)
	require.Error(t, err, "Watch after Close succeeded")
	eventually(t, "Pub/Sub connection closed", func() bool { return pubSubConns(t, c) == 0 })
	tok := storekit.NewToken()
	mustAcquire(t, s, store.Request{Key: k, Token: tok, TTL: time.Second})
	mustOutcome(t, store.OK)(s.Release(ctx, k, tok))
}

// TestWatchTimeout: when Redis does not confirm the subscription in time,
// Watch returns an error instead of blocking the waiter.
func TestWatchTimeout(t *testing.T) {
	s, srv, _ := newStore(t, redisstore.WithWatchTimeout(200*time.Millisecond))
	srv.Stop(t)
	_, _, err := s.Watch(context.Background(), key(t))
	require.Error(t, err, "Watch with Redis down succeeded")
	require.NotErrorIs(t, err, context.Canceled)
}

// pubSubConnIDs returns the ids of the server's clients in Pub/Sub mode.
func pubSubConnIDs(t *testing.T, c *redis.Client) []string {
	t.Helper()
	list, err := c.ClientList(context.Background()).Result()
	require.NoError(t, err)
	var ids []string
	for line := range strings.SplitSeq(strings.TrimSpace(list), "\n") {
		var id string
		pubsub := false
		for f := range strings.FieldsSeq(line) {
			if v, ok := strings.CutPrefix(f, "id="); ok {
				id = v
			}
			if v, ok := strings.CutPrefix(f, "flags="); ok && strings.Contains(v, "P") {
				pubsub = true
			}
		}
		if pubsub {
			ids = append(ids, id)
		}
	}
	return ids
}

// TestWatchIdleKeepsConnection: the receiver reads in short windows (so
// that Close never waits long for go-redis), and a window that ends without
// a message is no error: the subscription stays on its one connection
// across many idle windows, and a release still wakes the waiter.
func TestWatchIdleKeepsConnection(t *testing.T) {
	const window = 20 * time.Millisecond
	s, _, c := newStore(t, redisstore.WithWatchTimeout(window))
	ctx := context.Background()
	k := key(t)
	wake, stop, err := s.Watch(ctx, k)
	require.NoError(t, err)
	defer stop()
	before := pubSubConnIDs(t, c)
	require.Len(t, before, 1, "Pub/Sub connections")
	time.Sleep(50 * window)
	require.Equal(t, before, pubSubConnIDs(t, c), "Pub/Sub connections after idling: the receiver reconnected")
	tok := storekit.NewToken()
	mustAcquire(t, s, store.Request{Key: k, Token: tok, TTL: time.Minute})
	mustOutcome(t, store.OK)(s.Release(ctx, k, tok))
	select {
	case <-wake:
	case <-time.After(10 * time.Second):
		require.Fail(t, "waiter not woken after the connection idled")
	}
}
