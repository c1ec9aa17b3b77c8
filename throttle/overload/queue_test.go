package overload_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle/overload"
)

// The tests of this file pin the limit (MinLimit = MaxLimit), hold every
// permit, and watch the queue on the bubble's clock.

// pinned returns a limiter whose limit is n, with every permit taken.
func pinned(t *testing.T, n int) (*overload.Limiter, []overload.Permit) {
	t.Helper()
	l := newLimiter(t, overload.Config{MinLimit: n, MaxLimit: n})
	var held []overload.Permit
	for range n {
		p, err := l.Acquire(context.Background(), overload.Normal)
		require.NoError(t, err)
		held = append(held, p)
	}
	return l, held
}

// shedAfter asks for a permit, and returns how long it waited before it
// was shed, and why.
func shedAfter(t *testing.T, l *overload.Limiter) (time.Duration, overload.Reason) {
	t.Helper()
	start := time.Now()
	_, err := l.Acquire(context.Background(), overload.Normal)
	var rf *overload.Refusal
	require.ErrorAs(t, err, &rf)
	assert.Equal(t, time.Second, rf.RetryAfter)
	return time.Since(start), rf.Reason
}

// TestQueueTimeout: CoDel's two figures. A request waits for a permit up
// to the interval (100 ms); once a waiter was shed, the service is
// overloaded and a request waits only the target (5 ms); after an interval
// with no sign of overload, the interval again.
func TestQueueTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, held := pinned(t, 2)
		waited, why := shedAfter(t, l)
		assert.Equal(t, 100*time.Millisecond, waited)
		assert.Equal(t, overload.ReasonQueueTimeout, why)

		waited, _ = shedAfter(t, l)
		assert.Equal(t, 5*time.Millisecond, waited, "overloaded: the target")
		waited, _ = shedAfter(t, l)
		assert.Equal(t, 5*time.Millisecond, waited, "still overloaded")

		time.Sleep(100 * time.Millisecond)
		waited, _ = shedAfter(t, l)
		assert.Equal(t, 100*time.Millisecond, waited, "an interval later: the interval")

		s := l.Stats()
		assert.Equal(t, uint64(4), s.ShedQueueTimeout)
		assert.Equal(t, 2, s.InFlight)
		assert.Zero(t, s.Queued)
		for _, p := range held {
			p.End()
		}
		assert.Zero(t, l.Stats().InFlight)
	})
}

// waitInOrder starts one waiter per name, each queued before the next
// starts, and returns the order in which they were granted a permit
// (each ends it at once), once all were.
func waitInOrder(t *testing.T, l *overload.Limiter, names ...string) func() []string {
	var (
		mu    sync.Mutex
		order []string
		wg    sync.WaitGroup
	)
	for _, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := l.Acquire(context.Background(), overload.Normal)
			if !assert.NoError(t, err, name) {
				return
			}
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			p.End()
		}()
		synctest.Wait()
	}
	return func() []string {
		wg.Wait()
		return order
	}
}

// TestQueueOrder: waiters are served oldest first after a burst, and
// newest first once the service is overloaded (adaptive LIFO): under
// overload, the newest requests are those whose clients are likeliest
// still to be there.
func TestQueueOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, held := pinned(t, 1)
		order := waitInOrder(t, l, "a", "b", "c")
		held[0].End()
		assert.Equal(t, []string{"a", "b", "c"}, order(), "a burst: first come, first served")
	})
	synctest.Test(t, func(t *testing.T) {
		l, held := pinned(t, 1)
		shedAfter(t, l) // a sign of overload
		order := waitInOrder(t, l, "a", "b", "c")
		held[0].End()
		assert.Equal(t, []string{"c", "b", "a"}, order(), "overloaded: newest first")
	})
}

// TestQueueFull: the queue holds at most 64 waiters (or 4 per permit);
// the next is shed at once.
func TestQueueFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, held := pinned(t, 1)
		var wg sync.WaitGroup
		for range 64 {
			wg.Go(func() { _, _ = l.Acquire(context.Background(), overload.Normal) })
		}
		synctest.Wait()
		assert.Equal(t, 64, l.Stats().Queued)
		waited, why := shedAfter(t, l)
		assert.Zero(t, waited)
		assert.Equal(t, overload.ReasonQueueFull, why)
		wg.Wait()
		s := l.Stats()
		assert.Equal(t, uint64(1), s.ShedQueueFull)
		assert.Equal(t, uint64(64), s.ShedQueueTimeout)
		held[0].End()
	})
}

// TestCanceledWaiterLeaves: a waiter whose context ends leaves the queue
// at once, with its context's error, and is not counted as shed.
func TestCanceledWaiterLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, held := pinned(t, 1)
		ctx, cancel := context.WithCancel(context.Background())
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, err = l.Acquire(ctx, overload.Normal)
		}()
		synctest.Wait()
		assert.Equal(t, 1, l.Stats().Queued)
		start := time.Now()
		cancel()
		<-done
		assert.Zero(t, time.Since(start), "left at once")
		assert.ErrorIs(t, err, context.Canceled)
		s := l.Stats()
		assert.Zero(t, s.Queued)
		assert.Equal(t, uint64(1), s.Canceled)
		assert.Zero(t, s.ShedQueueTimeout)
		held[0].End()
	})
}

// TestCanceledWhileGranted: a waiter whose context ends as it is granted
// a permit gives the permit back.
func TestCanceledWhileGranted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, held := pinned(t, 1)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() {
			_, err := l.Acquire(ctx, overload.Normal)
			done <- err
		}()
		synctest.Wait()
		cancel()
		held[0].End() // grants the waiter, whichever it sees first
		assert.ErrorIs(t, <-done, context.Canceled)
		s := l.Stats()
		assert.Zero(t, s.InFlight, "the permit was given back")
		assert.Equal(t, uint64(1), s.Canceled)
		p, err := l.Acquire(context.Background(), overload.Normal)
		require.NoError(t, err, "the permit is free")
		p.End()
	})
}

// TestPriorities: a NeverShed request goes ahead at once whatever the
// load, and its latency does not teach the limit; a ShedFirst request
// goes ahead only when a permit is free and nobody waits.
func TestPriorities(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, held := pinned(t, 1)
		waiter := make(chan error)
		go func() {
			_, err := l.Acquire(context.Background(), overload.Normal)
			waiter <- err
		}()
		synctest.Wait()

		start := time.Now()
		p, err := l.Acquire(context.Background(), overload.ShedFirst)
		var rf *overload.Refusal
		require.ErrorAs(t, err, &rf)
		assert.Equal(t, overload.ReasonLimit, rf.Reason)
		assert.Zero(t, time.Since(start), "shed at once")
		assert.Equal(t, overload.Permit{}, p)

		p, err = l.Acquire(context.Background(), overload.NeverShed)
		require.NoError(t, err)
		assert.Zero(t, time.Since(start), "admitted at once")
		s := l.Stats()
		assert.Equal(t, 2, s.InFlight, "NeverShed counts as in flight")
		assert.Equal(t, 1, s.Queued)
		assert.Equal(t, uint64(1), s.ShedLimit)
		p.End()

		assert.ErrorAs(t, <-waiter, &rf, "the waiter was shed")
		held[0].End()
		p, err = l.Acquire(context.Background(), overload.ShedFirst)
		require.NoError(t, err, "a free permit and nobody waiting")
		p.End()
	})
}

// serveEach takes n permits of priority p in turn, each held for d, and
// ends each with end (Permit.End or Permit.Drop).
func serveEach(t *testing.T, l *overload.Limiter, p overload.Priority, n int, d time.Duration, end func(overload.Permit)) {
	t.Helper()
	for range n {
		pm, err := l.Acquire(context.Background(), p)
		require.NoError(t, err)
		time.Sleep(d)
		end(pm)
	}
}

// TestNeverShedTeachesNothing: fast NeverShed requests (health checks) do
// not make the base latency theirs, and a dropped permit frees its place
// without a latency.
func TestNeverShedTeachesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, overload.Config{})
		serveEach(t, l, overload.NeverShed, 100, time.Millisecond, overload.Permit.End)
		assert.Zero(t, l.Stats().BaseLatency)
		serveEach(t, l, overload.Normal, 100, time.Millisecond, overload.Permit.Drop)
		s := l.Stats()
		assert.Zero(t, s.BaseLatency)
		assert.Zero(t, s.InFlight)
		assert.Equal(t, uint64(200), s.Admitted)
		serveEach(t, l, overload.Normal, 100, 3*time.Millisecond, overload.Permit.End)
		assert.Equal(t, 3*time.Millisecond, l.Stats().BaseLatency)
		overload.Permit{}.End() // the zero Permit ends nothing
		overload.Permit{}.Drop()
	})
}

func TestNew(t *testing.T) {
	for _, c := range []overload.Config{{MinLimit: -1}, {MaxLimit: -1}, {MinLimit: 5, MaxLimit: 2}} {
		_, err := overload.New(c)
		assert.Error(t, err, "%+v", c)
		assert.True(t, errors.Is(err, storeInvalid), "%+v: %v", c, err)
	}
	l := newLimiter(t, overload.Config{MinLimit: 2000})
	assert.Equal(t, 2000, l.Stats().Limit, "MaxLimit defaults to MinLimit when MinLimit is over 1000")
	l = newLimiter(t, overload.Config{MaxLimit: 3})
	assert.Equal(t, 3, l.Stats().Limit)
}
