package throttle_test

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// queueStore is a store outside the process (it is not storekit.InMemory)
// whose acquisitions of the key "slow" wait until released, or for their
// context, while every other key is granted at once: a store that answers
// while one caller waits behind a burst.
type queueStore struct {
	brokenStore
	release chan struct{}
	slow    atomic.Int32 // slow calls waiting
}

func (s *queueStore) Acquire(ctx context.Context, req store.Request) (store.Grant, error) {
	if strings.HasSuffix(req.Key, ":slow}") {
		s.slow.Add(1)
		defer s.slow.Add(-1)
		select {
		case <-s.release:
		case <-ctx.Done():
			return store.Grant{}, ctx.Err()
		}
	}
	return store.Grant{Acquired: true, TTL: req.TTL, Holds: 1}, nil
}

// answerWhile makes acquisitions of other keys on l every millisecond until
// stop is closed: the store keeps answering this process.
func answerWhile(t *testing.T, l *throttle.Lock, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			_, err := l.Acquire(context.Background(), "fast-"+time.Now().String())
			assert.NoError(t, err)
		}
	})
	return &wg
}

// TestLoadIsNotAnOutage: a call that waits far longer than Options.Timeout
// while the store answers other calls is neither failed open nor failed
// closed: it gets the store's answer.
func TestLoadIsNotAnOutage(t *testing.T) {
	st := &queueStore{release: make(chan struct{})}
	l := newLock(t, st, throttle.LockConfig{Name: "load", Options: throttle.Options{Timeout: 20 * time.Millisecond}})
	stop := make(chan struct{})
	wg := answerWhile(t, l, stop)
	defer wg.Wait()
	defer close(stop)

	time.AfterFunc(10*20*time.Millisecond, func() { close(st.release) }) // ten timeouts
	lease, err := l.Admit(context.Background(), "slow")
	require.NoError(t, err)
	require.NotNil(t, lease, "the slow call was let through unguarded instead of waiting for the store")
	s := l.Stats()
	assert.Zero(t, s.FailedOpen)
	assert.Zero(t, s.StoreErrors)
	assert.Zero(t, s.Shed)
}

// TestLoadPastLimitIsShed: a call that waits past the load limit (30
// timeouts) while the store answers others is shed, turned away with
// ErrStore under a config that fails open: never let through.
func TestLoadPastLimitIsShed(t *testing.T) {
	st := &queueStore{release: make(chan struct{})}
	defer close(st.release)
	l := newLock(t, st, throttle.LockConfig{Name: "shed",
		Options: throttle.Options{Timeout: 5 * time.Millisecond, WhenStoreFails: throttle.FailOpen}})
	stop := make(chan struct{})
	wg := answerWhile(t, l, stop)
	defer wg.Wait()
	defer close(stop)

	lease, err := l.Admit(context.Background(), "slow")
	require.ErrorIs(t, err, throttle.ErrStore)
	assert.Nil(t, lease)
	s := l.Stats()
	assert.Equal(t, uint64(1), s.Shed)
	assert.Zero(t, s.FailedOpen)
}

// TestSilenceIsAnOutage: a store that answers nothing fails the call once
// it has been silent for a timeout (ten while it has never answered this
// process), and WhenStoreFails applies: failing open lets the request through.
func TestSilenceIsAnOutage(t *testing.T) {
	st := &queueStore{release: make(chan struct{})}
	defer close(st.release)
	l := newLock(t, st, throttle.LockConfig{Name: "silent",
		Options: throttle.Options{Timeout: 20 * time.Millisecond, WhenStoreFails: throttle.FailOpen}})
	// The store answers once, then hangs.
	_, err := l.Acquire(context.Background(), "warm")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		lease, err := l.Admit(context.Background(), "slow")
		assert.Nil(t, lease)
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err, "failing open")
	case <-time.After(5 * time.Second):
		require.Fail(t, "a silent store held the request")
	}
	s := l.Stats()
	assert.Equal(t, uint64(1), s.FailedOpen)
	assert.Zero(t, s.Shed)
}

// fastClock is a clock whose every tick moves it a whole tick on, two real
// milliseconds apart: the ten Timeouts before a store's first answer pass
// in a few real milliseconds, long before go-redis gives up dialing.
type fastClock struct{ at atomic.Int64 }

func newFastClock() *fastClock {
	c := &fastClock{}
	c.at.Store(int64(time.Second))
	return c
}

func (c *fastClock) Now() time.Duration { return time.Duration(c.at.Load()) }

func (c *fastClock) After(d time.Duration) <-chan time.Time {
	c.at.Add(int64(d))
	return time.After(2 * time.Millisecond)
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRefusedIsAnOutageAtOnce: a store where nothing listens on a fresh
// process is an outage from the first call, decided without the grace given
// to a store that has not answered yet (go-redis dials again for a while
// before it returns: the store's dial hook tells the monitor), and the log
// and the error name the refusal.
func TestRefusedIsAnOutageAtOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	st := redisstore.New(client)
	t.Cleanup(func() { _ = st.Close() })
	var logs syncBuffer
	const timeout = 100 * time.Millisecond
	l := newLock(t, st, throttle.LockConfig{Name: "refused", Options: throttle.Options{Timeout: timeout,
		WhenStoreFails: throttle.FailClosed, Logger: slog.New(slog.NewTextHandler(&logs, nil))}})
	clk := newFastClock()
	throttle.SetClock(l, clk.Now, clk.After)

	start := clk.Now()
	lease, err := l.Admit(context.Background(), "u")
	waited := clk.Now() - start
	require.ErrorIs(t, err, throttle.ErrStore)
	assert.Nil(t, lease)
	assert.ErrorContains(t, err, "connection refused")
	assert.NotContains(t, err.Error(), "answered no call")
	assert.Contains(t, logs.String(), "connection refused", "the log names the cause")
	assert.Less(t, waited, throttle.BusyQuiets*timeout, "the decision waited for the grace of a store that has not answered yet")
}
