// Package obskittest drives an overload limiter through every way it
// admits and sheds, for the tests of the observer packages: each checks
// what its metrics say against Want.
package obskittest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/overload"
)

// Want is what Drive leaves behind, for a limiter named Name with its
// limit pinned at Limit.
var Want = struct {
	Name string
	// While check runs: the limit, the requests in flight and waiting,
	// and the base latency (the median of the first requests, served one
	// at a time).
	Limit, InFlight, Queued int
	BaseLatency             time.Duration
	// At the end: permits granted, and how many waited (Waited, the rest
	// were admitted at once); requests shed by reason; waiters whose
	// context ended.
	Admitted, Waited int
	Waits            time.Duration
	Shed             map[overload.Reason]int
	Canceled         int
}{
	Name: "report", Limit: 2, InFlight: 2, Queued: 64, BaseLatency: 10 * time.Millisecond,
	Admitted: 13, Waited: 1, Waits: 30 * time.Millisecond,
	Shed:     map[overload.Reason]int{overload.ReasonLimit: 1, overload.ReasonQueueTimeout: 65, overload.ReasonQueueFull: 1},
	Canceled: 1,
}

// Drive runs, in a synctest bubble, a limiter named Want.Name with its
// limit pinned at Want.Limit, telling obs of its events, and calls
// watch(l) once it is made: ten requests of 10 ms one at a time (the base
// latency); two permits held, and a request that waits 30 ms for one;
// a ShedFirst request shed at once; a waiter whose context ends; one shed
// by its queueing delay; then a full queue of 64 waiters, during which it
// calls check, one more request shed as the queue is full, and the 64
// shed by their queueing delay. Every permit is then ended.
func Drive(t *testing.T, obs throttle.Observer, watch func(*overload.Limiter), check func(t *testing.T)) {
	synctest.Test(t, func(t *testing.T) {
		l, err := overload.New(overload.Config{Name: Want.Name, MinLimit: Want.Limit, MaxLimit: Want.Limit, Observer: obs})
		require.NoError(t, err)
		watch(l)
		ctx := context.Background()
		for range 10 {
			p, err := l.Acquire(ctx, overload.Normal)
			require.NoError(t, err)
			time.Sleep(10 * time.Millisecond)
			p.End()
		}
		held := acquire(t, l, overload.Normal, 2)
		waited := make(chan overload.Permit)
		go func() { waited <- acquire(t, l, overload.Normal, 1)[0] }()
		synctest.Wait()
		time.Sleep(Want.Waits)
		held[0].End()
		held[0] = <-waited

		shed(t, l, overload.ShedFirst, overload.ReasonLimit)
		canceled, cancel := context.WithCancel(ctx)
		done := make(chan error)
		go func() {
			_, err := l.Acquire(canceled, overload.Normal)
			done <- err
		}()
		synctest.Wait()
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		shed(t, l, overload.Normal, overload.ReasonQueueTimeout)

		var wg sync.WaitGroup
		for range Want.Queued {
			wg.Go(func() { shed(t, l, overload.Normal, overload.ReasonQueueTimeout) })
		}
		synctest.Wait()
		check(t)
		shed(t, l, overload.Normal, overload.ReasonQueueFull)
		wg.Wait()
		for _, p := range held {
			p.End()
		}
	})
}

// acquire returns n permits of l, taken at once.
func acquire(t *testing.T, l *overload.Limiter, p overload.Priority, n int) []overload.Permit {
	var out []overload.Permit
	for range n {
		pm, err := l.Acquire(context.Background(), p)
		if err != nil {
			t.Errorf("Acquire: %v", err)
		}
		out = append(out, pm)
	}
	return out
}

// shed asks l for a permit that it must shed for want.
func shed(t *testing.T, l *overload.Limiter, p overload.Priority, want overload.Reason) {
	_, err := l.Acquire(context.Background(), p)
	var rf *overload.Refusal
	if !errors.As(err, &rf) || rf.Reason != want {
		t.Errorf("Acquire: %v, want a refusal for %s", err, want)
	}
}
