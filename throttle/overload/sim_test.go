package overload

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// backend is a service of known capacity: slots requests at once, each
// for work; a request waits for a free slot.
type backend struct {
	slots chan struct{}
	work  time.Duration
}

func newBackend(slots int, work time.Duration) *backend {
	return &backend{slots: make(chan struct{}, slots), work: work}
}

func (b *backend) serve(ctx context.Context) error {
	select {
	case b.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	time.Sleep(b.work)
	<-b.slots
	return nil
}

// result is what a simulated client saw.
type result struct {
	at      time.Duration // arrival, since the run began
	latency time.Duration
	wait    time.Duration
	ok      bool
	reason  Reason
}

type recorder struct {
	mu  sync.Mutex
	out []result
}

func (r *recorder) add(x result) {
	r.mu.Lock()
	r.out = append(r.out, x)
	r.mu.Unlock()
}

// drive sends requests open loop at rate per second for d, each through l
// to b, and records them; it returns at once, the requests still running.
func drive(l *Limiter, b *backend, rate float64, d time.Duration, t0 time.Time, rec *recorder, wg *sync.WaitGroup) {
	every := time.Duration(float64(time.Second) / rate)
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			start := time.Now()
			x := result{at: start.Sub(t0)}
			p, err := l.Acquire(ctx, Normal)
			x.wait = time.Since(start)
			if err == nil {
				if b.serve(ctx) == nil {
					p.End()
					x.ok = true
				} else {
					p.Drop()
				}
			} else if r, ok := err.(*Refusal); ok {
				x.reason = r.Reason
			}
			x.latency = time.Since(start)
			rec.add(x)
		}()
		time.Sleep(every)
	}
}

func TestSimulate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _ := New(Config{})
		b := newBackend(4, 50*time.Millisecond)
		rec := &recorder{}
		var wg sync.WaitGroup
		t0 := time.Now()
		done := make(chan struct{})
		go func() {
			for {
				select {
				case <-done:
					return
				case <-time.After(500 * time.Millisecond):
					s := l.Stats()
					fmt.Printf("%5.1fs limit %d inflight %d queued %d base %v shed %d/%d/%d\n", time.Since(t0).Seconds(), s.Limit, s.InFlight, s.Queued, s.BaseLatency, s.ShedLimit, s.ShedQueueTimeout, s.ShedQueueFull)
				}
			}
		}()
		phases := []struct {
			rate float64
			d    time.Duration
		}{{64, 10 * time.Second}, {160, 10 * time.Second}, {64, 5 * time.Second}, {400, 10 * time.Second}, {64, 5 * time.Second}}
		var at time.Duration
		for _, ph := range phases {
			drive(l, b, ph.rate, ph.d, t0, rec, &wg)
			from := at
			at += ph.d
			wg.Wait()
			report(t, rec.out, from, at, ph.rate)
		}
		close(done)
	})
}

func report(t *testing.T, rs []result, from, to time.Duration, rate float64) {
	var lat []time.Duration
	good, shed := 0, 0
	for _, r := range rs {
		if r.at < from || r.at >= to {
			continue
		}
		if r.ok {
			lat = append(lat, r.latency)
			if r.latency <= 500*time.Millisecond {
				good++
			}
		} else {
			shed++
		}
	}
	slices.Sort(lat)
	p := func(q float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[int(q*float64(len(lat)-1))]
	}
	secs := (to - from).Seconds()
	// Latency by second.
	for sec := from; sec < to; sec += time.Second {
		var mx time.Duration
		n := 0
		for _, r := range rs {
			if r.ok && r.at >= sec && r.at < sec+time.Second {
				mx = max(mx, r.latency)
				if r.latency > 100*time.Millisecond {
					n++
				}
			}
		}
		fmt.Printf("  [%v] max %v over100 %d\n", sec, mx, n)
	}
	fmt.Printf("rate %v: goodput %.1f%% of 80/s, shed %d, p50 %v p99 %v max %v\n", rate, float64(good)/secs/80*100, shed, p(0.5), p(0.99), p(1))
}
