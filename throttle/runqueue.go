package throttle

import (
	"runtime/metrics"
	"sort"
	"time"
)

// schedLatencies is the runtime's histogram of how long goroutines waited,
// runnable, before they ran (a sample of the scheduling events).
const schedLatencies = "/sched/latencies:seconds"

// runQueue tells a monitor whether goroutines of this process waited in the
// run queue since its last tick. A monitor's own tick is no proof that the
// process has the CPU: a goroutine woken by its timer runs next on its
// processor, while the goroutines that write calls and read replies wait
// behind the others; on a machine short of cores they may wait a Timeout
// with the replies unread while every tick comes on time. Only the monitor's
// goroutine reads it, once a tick.
type runQueue struct {
	sample []metrics.Sample // reused: the runtime fills the same histogram
	prev   []uint64         // the counts at the previous reading
}

// newRunQueue returns a runQueue whose first reading counts the waits since
// now; nil when the runtime does not keep the histogram.
func newRunQueue() *runQueue {
	q := &runQueue{sample: []metrics.Sample{{Name: schedLatencies}}}
	metrics.Read(q.sample)
	if q.sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	q.prev = append([]uint64(nil), q.sample[0].Value.Float64Histogram().Counts...)
	return q
}

// restart makes the next reading count the waits since now.
func (q *runQueue) restart() {
	metrics.Read(q.sample)
	copy(q.prev, q.sample[0].Value.Float64Histogram().Counts)
}

// waited reports whether a goroutine, since the previous reading, became
// runnable and then waited at least d before it ran. The runtime records
// one scheduling event in eight: a run queue that makes goroutines wait
// does so for many.
func (q *runQueue) waited(d time.Duration) bool {
	metrics.Read(q.sample)
	h := q.sample[0].Value.Float64Histogram()
	return waitedOver(q.prev, h.Counts, h.Buckets, d.Seconds())
}

// waitedOver reports whether counts, a histogram over buckets (Counts[i]
// is for [buckets[i], buckets[i+1]), in seconds), counts more than prev in
// a bucket that starts at d or above; it copies counts into prev.
func waitedOver(prev, counts []uint64, buckets []float64, d float64) bool {
	over := false
	for i := sort.SearchFloat64s(buckets, d); i < len(counts) && i < len(prev); i++ {
		if counts[i] > prev[i] {
			over = true
			break
		}
	}
	copy(prev, counts)
	return over
}
