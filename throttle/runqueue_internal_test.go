package throttle

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWaitedOver: a wait counts when its bucket starts at the threshold or
// above and it came since the previous reading; every reading becomes the
// next one's base.
func TestWaitedOver(t *testing.T) {
	buckets := []float64{0, 0.001, 0.002, 0.004, 0.008}
	prev := []uint64{5, 5, 5, 5}
	assert.False(t, waitedOver(prev, []uint64{9, 9, 5, 5}, buckets, 0.002), "waits under the threshold")
	assert.Equal(t, []uint64{9, 9, 5, 5}, prev, "the reading is the next base")
	assert.True(t, waitedOver(prev, []uint64{9, 9, 6, 5}, buckets, 0.002), "a wait in the bucket at the threshold")
	assert.False(t, waitedOver(prev, []uint64{9, 9, 6, 5}, buckets, 0.002), "counted again at the next reading")
	assert.True(t, waitedOver(prev, []uint64{9, 9, 6, 6}, buckets, 0.003), "a wait in a bucket above the threshold")
	assert.False(t, waitedOver(prev, []uint64{9, 9, 7, 6}, buckets, 0.003), "a bucket that starts under the threshold")
}

// onTimeClock is a monitor's clock on which every tick comes exactly on
// time, a real millisecond apart: only the run queue can tell the monitor
// that the process is starved.
type onTimeClock struct {
	at    atomic.Int64
	ticks atomic.Int64
}

func (c *onTimeClock) clock() clock {
	c.at.Store(int64(time.Second))
	return clock{now: c.at.Load, after: func(d time.Duration) <-chan time.Time {
		c.at.Add(int64(d))
		c.ticks.Add(1)
		return time.After(time.Millisecond)
	}}
}

// watched returns a monitor on an on-time clock that reads the run queue
// from now.
func watched(t *testing.T) (*monitor, *onTimeClock) {
	clk := new(onTimeClock)
	m := newMonitor(clk.clock())
	m.runq = newRunQueue()
	require.NotNil(t, m.runq, "the runtime keeps no scheduling latencies")
	return m, clk
}

// inFlight puts a call judged on timeout in flight on m until the returned
// function ends it and waits for m's goroutine to stop.
func inFlight(t *testing.T, m *monitor, timeout time.Duration) func() {
	start := m.clock.now()
	c := m.add(context.Background(), false, int64(timeout), start, start+int64(time.Hour), false)
	var once sync.Once
	end := func() {
		once.Do(func() {
			_, _ = m.remove(c)
			require.Eventually(t, func() bool { return !m.running.Load() }, 10*time.Second, time.Millisecond,
				"the monitor kept ticking without calls")
		})
	}
	t.Cleanup(end)
	return end
}

// spin keeps n goroutines busy, never blocking, until the returned
// function stops them.
func spin(t *testing.T, n int) func() {
	var stop atomic.Bool
	var spinning sync.WaitGroup
	for range n {
		spinning.Go(func() {
			for !stop.Load() {
				runtime.KeepAlive(n) // busy on purpose: the runtime preempts it after 10 ms
			}
		})
	}
	var once sync.Once
	end := func() {
		once.Do(func() {
			stop.Store(true)
			spinning.Wait()
		})
	}
	t.Cleanup(end)
	return end
}

// TestStarvedByRunQueue: a monitor whose ticks all come on time still
// counts the process as starved of CPU when goroutines wait in the run
// queue for a tick (here: eight busy goroutines a processor, which the
// runtime preempts every 10 ms: each waits about 70 ms for its turn), and
// does not while the process is idle, even when such waits came before its
// calls (its base was taken before them).
func TestStarvedByRunQueue(t *testing.T) {
	idle, idleClock := watched(t)
	busy, _ := watched(t)
	endBusy := inFlight(t, busy, 20*time.Millisecond) // a tick: 5 ms
	endSpin := spin(t, 8*runtime.GOMAXPROCS(0))
	require.Eventually(t, func() bool { return busy.lateAt.Load() != 0 }, 10*time.Second, 10*time.Millisecond,
		"goroutines waited in the run queue, and the monitor did not count the process starved")
	endSpin()
	endBusy()

	ticks := idleClock.ticks.Load()
	endIdle := inFlight(t, idle, 160*time.Millisecond) // a tick: 40 ms
	require.Eventually(t, func() bool { return idleClock.ticks.Load() >= ticks+30 }, 10*time.Second, time.Millisecond,
		"the idle monitor did not tick")
	endIdle()
	assert.Zero(t, idle.lateAt.Load(), "an idle process counted starved")
}

// BenchmarkRunQueueWaited measures a tick's reading of the run queue (it
// allocates nothing).
func BenchmarkRunQueueWaited(b *testing.B) {
	q := newRunQueue()
	b.ReportAllocs()
	for b.Loop() {
		q.waited(5 * time.Millisecond)
	}
}
