package overload_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle/overload"
)

// The tests run in a testing/synctest bubble: time moves only when every
// goroutine waits, so a simulated service of known capacity behaves the
// same on any machine, and seconds of load take milliseconds.

// service is a handler of known capacity: slots requests at once, each
// holding its slot for work; a request waits for a free slot, or for its
// context to end.
type service struct {
	slots  chan struct{}
	work   atomic.Int64  // a time.Duration
	jitter time.Duration // added to work: up to this much, at random
}

func newService(slots int, work time.Duration) *service {
	s := &service{slots: make(chan struct{}, slots)}
	s.work.Store(int64(work))
	return s
}

func (s *service) serve(ctx context.Context) bool {
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	d := time.Duration(s.work.Load())
	if s.jitter > 0 {
		d += rand.N(s.jitter)
	}
	time.Sleep(d)
	<-s.slots
	return true
}

// answer is what one simulated client got.
type answer struct {
	phase   int
	latency time.Duration // from arrival to answer
	ok      bool
	reason  overload.Reason // why it was shed; "" if it was not
}

// sim drives a service through a Limiter open loop: requests arrive at a
// fixed rate whatever the answers, each on a goroutine of its own, and
// give up after a second.
type sim struct {
	l   *overload.Limiter
	svc *service
	t0  time.Time

	mu      sync.Mutex
	answers []answer
	limits  []limitAt
	wg      sync.WaitGroup
	stop    chan struct{}
	sampled chan struct{}
}

// limitAt is the limit at a time since the simulation began.
type limitAt struct {
	at    time.Duration
	limit int
}

// newSim starts sampling l's limit every 50 ms; end stops it.
func newSim(l *overload.Limiter, svc *service) *sim {
	s := &sim{l: l, svc: svc, t0: time.Now(), stop: make(chan struct{}), sampled: make(chan struct{})}
	go func() {
		defer close(s.sampled)
		for {
			select {
			case <-s.stop:
				return
			case <-time.After(50 * time.Millisecond):
				s.mu.Lock()
				s.limits = append(s.limits, limitAt{time.Since(s.t0), l.Stats().Limit})
				s.mu.Unlock()
			}
		}
	}()
	return s
}

// run sends rate requests a second for d, as phase; it returns when the
// last has arrived, the requests still running.
func (s *sim) run(phase int, rate float64, d time.Duration) {
	every := time.Duration(float64(time.Second) / rate)
	for range int(rate * d.Seconds()) {
		s.wg.Add(1)
		go s.request(phase)
		time.Sleep(every)
	}
}

func (s *sim) request(phase int) {
	defer s.wg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	a := answer{phase: phase}
	p, err := s.l.Acquire(ctx, overload.Normal)
	var rf *overload.Refusal
	switch {
	case errors.As(err, &rf):
		a.reason = rf.Reason
	case err == nil && s.svc.serve(ctx):
		a.ok = true
		p.End()
	case err == nil:
		p.Drop()
	}
	a.latency = time.Since(start)
	s.mu.Lock()
	s.answers = append(s.answers, a)
	s.mu.Unlock()
}

// end waits for every request, and stops the sampler.
func (s *sim) end() {
	s.wg.Wait()
	close(s.stop)
	<-s.sampled
}

// phaseStats are one phase's figures.
type phaseStats struct {
	ok, good, shed int
	p50, p99       time.Duration
}

// stats returns the figures of phase: good counts the answers within
// goodWithin.
func (s *sim) stats(phase int, goodWithin time.Duration) phaseStats {
	var ps phaseStats
	var lat []time.Duration
	for _, a := range s.answers {
		if a.phase != phase {
			continue
		}
		if !a.ok {
			ps.shed++
			continue
		}
		ps.ok++
		lat = append(lat, a.latency)
		if a.latency <= goodWithin {
			ps.good++
		}
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		ps.p50 = lat[len(lat)/2]
		ps.p99 = lat[int(math.Ceil(0.99*float64(len(lat))))-1]
	}
	return ps
}

// limit returns the median of the limits sampled in [from, to).
func (s *sim) limit(from, to time.Duration) int {
	var v []int
	for _, l := range s.limits {
		if l.at >= from && l.at < to {
			v = append(v, l.limit)
		}
	}
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// within returns the first time from from on at which the sampled limit
// was within 10% of want, or -1.
func (s *sim) within(from time.Duration, want int) time.Duration {
	for _, l := range s.limits {
		if l.at >= from && math.Abs(float64(l.limit-want)) <= 0.1*float64(want) {
			return l.at - from
		}
	}
	return -1
}

// newLimiter returns a Limiter of the zero Config, or fails the test.
func newLimiter(t testing.TB, c overload.Config) *overload.Limiter {
	t.Helper()
	l, err := overload.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
