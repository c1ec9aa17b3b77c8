package throttle_test

import (
	"context"
	"fmt"
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

// manualClock is a clock that moves only when the test ticks it: the
// monitor waits on After, and Tick lets that wait end at its due time
// (plus late, a tick that comes late as in a process starved of CPU).
type manualClock struct {
	mu     sync.Mutex
	now    time.Duration
	due    time.Duration
	waiter chan time.Time
	armed  chan struct{} // told when the monitor waits
	ended  bool          // every wait ends at once: the monitor can stop
}

func newManualClock() *manualClock {
	return &manualClock{now: time.Second, armed: make(chan struct{}, 1)}
}

func (c *manualClock) Now() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		ch <- time.Time{}
		return ch
	}
	c.waiter, c.due = ch, c.now+d
	c.armed <- struct{}{}
	return ch
}

// end lets the monitor's goroutine end: its waits end at once from now on.
func (c *manualClock) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended = true
	if c.waiter != nil {
		select {
		case c.waiter <- time.Time{}:
		default:
		}
	}
}

// Tick waits for the monitor to wait and ends its wait, unless done is
// ready first (the call under test returned); it reports whether it ticked.
func (c *manualClock) Tick(late time.Duration, done <-chan struct{}) bool {
	select {
	case <-c.armed:
	case <-done:
		return false
	}
	c.mu.Lock()
	c.now = c.due + late
	ch := c.waiter
	c.mu.Unlock()
	ch <- time.Time{}
	return true
}

// slowAdmit admits "slow" on l in the background; the returned channel is
// closed once it returned, its outcome then in *lease and *err.
func slowAdmit(l *throttle.Lock, lease **throttle.Lease, err *error) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		*lease, *err = l.Admit(context.Background(), "slow")
	}()
	return done
}

// tickFor ticks clk until it moved by d (each tick late by late, after
// answer when not nil) or done is ready, and reports whether it is.
func tickFor(clk *manualClock, d, late time.Duration, answer func(), done <-chan struct{}) bool {
	for until := clk.Now() + d; clk.Now() < until; {
		if answer != nil {
			answer()
		}
		if !clk.Tick(late, done) {
			return true
		}
	}
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// decided waits for done, which the ticks so far must have made ready (the
// wait is a hang guard, not a measure).
func decided(t *testing.T, done <-chan struct{}, msg string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		require.Fail(t, msg)
	}
}

// lockOn returns a lock on st with timeout and fail, on a manual clock.
func lockOn(t *testing.T, st store.Store, timeout time.Duration, fail throttle.FailMode) (*throttle.Lock, *manualClock) {
	l := newLock(t, st, throttle.LockConfig{Name: "live", Options: throttle.Options{Timeout: timeout, WhenStoreFails: fail}})
	clk := newManualClock()
	throttle.SetClock(l, clk.Now, clk.After)
	t.Cleanup(clk.end)
	return l, clk
}

// answers returns a function that makes one acquisition the store answers.
func answers(t *testing.T, l *throttle.Lock) func() {
	n := 0
	return func() {
		n++
		_, err := l.Acquire(context.Background(), fmt.Sprint("fast-", n))
		require.NoError(t, err)
	}
}

const liveTimeout = 20 * time.Millisecond

// TestLoadIsNotAnOutage: a call that waits far longer than Options.Timeout
// while the store answers other calls is neither failed open nor failed
// closed: it gets the store's answer.
func TestLoadIsNotAnOutage(t *testing.T) {
	st := &queueStore{release: make(chan struct{})}
	l, clk := lockOn(t, st, liveTimeout, throttle.FailOpen)
	var lease *throttle.Lease
	var err error
	done := slowAdmit(l, &lease, &err)
	require.False(t, tickFor(clk, 10*liveTimeout, 0, answers(t, l), done), "the call was decided while the store answered")
	close(st.release)
	<-done
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
	l, clk := lockOn(t, st, liveTimeout, throttle.FailOpen)
	var lease *throttle.Lease
	var err error
	done := slowAdmit(l, &lease, &err)
	fast := answers(t, l)
	require.False(t, tickFor(clk, 30*liveTimeout-2*liveTimeout/4, 0, fast, done), "shed before the load limit")
	tickFor(clk, liveTimeout, 0, fast, done)
	decided(t, done, "not shed at the load limit")
	require.ErrorIs(t, err, throttle.ErrStore)
	assert.Nil(t, lease)
	s := l.Stats()
	assert.Equal(t, uint64(1), s.Shed)
	assert.Zero(t, s.FailedOpen)
}

// TestSilenceIsAnOutage: a store that answered once and then answers
// nothing fails the call within about a Timeout (a tick dates the answer,
// and silence must be seen on two ticks), and WhenStoreFails applies:
// failing open lets the request through. Before its first answer, or while
// the process is starved of CPU (its ticks come late), the silence must
// last ten Timeouts.
func TestSilenceIsAnOutage(t *testing.T) {
	tick := liveTimeout / 4
	for _, c := range []struct {
		name     string
		warm     bool
		late     time.Duration
		min, max time.Duration // the decision comes after min, by max
	}{
		{"answered before", true, 0, liveTimeout, 2 * liveTimeout},
		{"never answered", false, 0, throttle.BusyQuiets * liveTimeout, (throttle.BusyQuiets + 1) * liveTimeout},
		{"starved", true, 3 * time.Millisecond, throttle.BusyQuiets * liveTimeout, (throttle.BusyQuiets + 2) * liveTimeout},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := &queueStore{release: make(chan struct{})}
			defer close(st.release)
			l, clk := lockOn(t, st, liveTimeout, throttle.FailOpen)
			if c.warm {
				answers(t, l)()
			}
			var lease *throttle.Lease
			var err error
			done := slowAdmit(l, &lease, &err)
			require.False(t, tickFor(clk, c.min-2*(tick+c.late), c.late, nil, done), "decided too soon")
			tickFor(clk, c.max-c.min+2*(tick+c.late), c.late, nil, done)
			decided(t, done, "a silent store held the request")
			require.NoError(t, err, "failing open")
			assert.Nil(t, lease)
			s := l.Stats()
			assert.Equal(t, uint64(1), s.FailedOpen)
			assert.Zero(t, s.Shed)
		})
	}
}

// TestSharedCallsEachDecided: calls from context.Background sent together
// share one context (see storeCall); a silent store still fails every one
// of them within about a Timeout, each with its own decision (here: failing
// open), whatever the order in which they leave the shared call.
func TestSharedCallsEachDecided(t *testing.T) {
	const callers = 20 // more than the monitor's shards: some surely share
	st := &queueStore{release: make(chan struct{})}
	defer close(st.release)
	l, clk := lockOn(t, st, liveTimeout, throttle.FailOpen)
	answers(t, l)()
	leases := make([]*throttle.Lease, callers)
	errs := make([]error, callers)
	dones := make([]<-chan struct{}, callers)
	for i := range callers {
		dones[i] = slowAdmit(l, &leases[i], &errs[i])
	}
	require.Eventually(t, func() bool { return st.slow.Load() == callers }, 10*time.Second, time.Millisecond,
		"the calls did not all reach the store")
	all := make(chan struct{})
	go func() {
		for _, d := range dones {
			<-d
		}
		close(all)
	}()
	tickFor(clk, 2*liveTimeout+liveTimeout/2, 0, nil, all)
	decided(t, all, "a silent store held requests that shared a call")
	for i := range callers {
		require.NoError(t, errs[i], "failing open")
		assert.Nil(t, leases[i])
	}
	assert.Equal(t, uint64(callers), l.Stats().FailedOpen)
}

// TestCancelledCallerEndsItsCall: a call from a cancellable context,
// waiting on a store that answers others, ends at the monitor's first tick
// after its caller's cancellation, with the caller's error: the request is
// neither held for the load limit nor counted as a store failure.
func TestCancelledCallerEndsItsCall(t *testing.T) {
	st := &queueStore{release: make(chan struct{})}
	defer close(st.release)
	l, clk := lockOn(t, st, liveTimeout, throttle.FailOpen)
	answers(t, l)()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err = l.Admit(ctx, "slow")
	}()
	require.Eventually(t, func() bool { return st.slow.Load() == 1 }, 10*time.Second, time.Millisecond,
		"the call did not reach the store")
	require.False(t, tickFor(clk, 2*liveTimeout, 0, answers(t, l), done), "the call ended before its caller's cancellation")
	cancel()
	tickFor(clk, liveTimeout/4, 0, nil, done)
	decided(t, done, "a cancelled caller's call waited past the next tick")
	require.ErrorIs(t, err, context.Canceled)
	s := l.Stats()
	assert.Zero(t, s.StoreErrors)
	assert.Zero(t, s.FailedOpen)
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
