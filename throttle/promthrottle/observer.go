package promthrottle

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// The metric names Observer exports; the package documentation describes
// each.
const (
	requestsName      = "throttle_requests_total"
	storeDurationName = "throttle_store_duration_seconds"
	storeErrorsName   = "throttle_store_errors_total"
	holdDurationName  = "throttle_hold_duration_seconds"
	leaseEventsName   = "throttle_lease_events_total"
	memstoreKeysName  = "throttle_memstore_keys"
)

// Observer counts a limiter's decisions, store calls, holds and lease events
// as Prometheus metrics. It is a throttle.Observer, to set as
// Options.Observer, and a prometheus.Collector, to register once:
//
//	obs := promthrottle.New()
//	prometheus.MustRegister(obs)
//	l, err := throttle.NewLock(st, throttle.LockConfig{Name: "submit",
//		Options: throttle.Options{Observer: obs}})
//
// One Observer serves any number of policies, each told apart by its policy
// label; register it in one registry only (a second Observer in the same
// registry is refused as a duplicate). It is safe for concurrent use.
type Observer struct {
	requests    *prometheus.CounterVec
	storeTime   *prometheus.HistogramVec
	storeErrors *prometheus.CounterVec
	holdTime    *prometheus.HistogramVec
	leaseEvents *prometheus.CounterVec
	keys        *prometheus.Desc
	stores      []*memstore.Store

	// index maps each policy name seen to its series by mode (two
	// limiters may, unwisely, share a name under different modes). It is
	// copied on write, under mu, so that Observe finds a policy with one
	// atomic load and one map read, without a lock. (A string key takes
	// the runtime's fast path; a struct of name and mode was twice as
	// slow.)
	index atomic.Pointer[map[string]*modes]
	mu    sync.Mutex
}

// modes holds a policy's series by throttle.Mode, the last slot serving
// every mode the core does not define (labelled "unknown").
type modes [throttle.ModeReplay + 2]atomic.Pointer[series]

// The label values of the fixed enums, by slot.
var (
	outcomeNames = [...]string{"admitted", "rejected", "dry_run_rejected", "failed_open",
		"failed_closed", "fallback", "key_error", "replayed", "shed"}
	opNames     = [...]string{"acquire", "release", "extend", "quota"}
	reasonNames = [...]string{"done", "failed", "panic", "unknown"}
	leaseNames  = [...]string{"extended", "lost", "fallback_on", "fallback_off"}
)

// series holds one (policy, mode)'s metric children, each resolved from its
// vector the first time it is needed and kept, so that an Observe in the
// steady state neither hashes label values nor allocates. A child that was
// never needed does not exist: its series appears in the scrape the first
// time its event happens.
type series struct {
	o            *Observer
	policy, mode string

	outcomes    [len(outcomeNames)]atomic.Pointer[prometheus.Counter]
	storeTime   [len(opNames)]atomic.Pointer[prometheus.Observer]
	storeErrors [len(opNames)]atomic.Pointer[prometheus.Counter]
	holdTime    [len(reasonNames)]atomic.Pointer[prometheus.Observer]
	leaseEvents [len(leaseNames)]atomic.Pointer[prometheus.Counter]
}

// New returns an Observer with no series yet: each appears when its first
// event is observed.
func New(opts ...Option) *Observer {
	c := config{storeBuckets: defaultStoreBuckets, holdBuckets: defaultHoldBuckets}
	for _, opt := range opts {
		opt(&c)
	}
	mustBeBuckets("WithStoreBuckets", c.storeBuckets)
	mustBeBuckets("WithHoldBuckets", c.holdBuckets)
	o := &Observer{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: requestsName,
			Help: "Requests decided by a throttle policy, by outcome: admitted, rejected, dry_run_rejected, " +
				"failed_open, failed_closed, fallback, key_error or replayed.",
		}, []string{"policy", "mode", "outcome"}),
		storeTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    storeDurationName,
			Help:    "Duration of a throttle policy's store calls (acquire, release, extend, quota), failed ones included.",
			Buckets: c.storeBuckets,
		}, []string{"policy", "op"}),
		storeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: storeErrorsName,
			Help: "Store calls of a throttle policy that failed or timed out, by op.",
		}, []string{"policy", "op"}),
		holdTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    holdDurationName,
			Help:    "How long a released key was held, by why it was released: done, failed or panic.",
			Buckets: c.holdBuckets,
		}, []string{"policy", "mode", "reason"}),
		leaseEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: leaseEventsName,
			Help: "Lease and store-health events of a throttle policy: extended, lost, fallback_on, fallback_off.",
		}, []string{"policy", "event"}),
		keys: prometheus.NewDesc(memstoreKeysName,
			"Keys (locks, fencing counters and quotas) held now in the in-memory stores given to the observer.",
			nil, nil),
		stores: c.stores,
	}
	o.index.Store(&map[string]*modes{})
	return o
}

// Observe counts e. It implements throttle.Observer: a limiter calls it on
// the request's goroutine, so in the steady state (every series it touches
// already exists) it takes no lock and allocates nothing. ctx is unused.
func (o *Observer) Observe(_ context.Context, e throttle.Event) {
	s := o.series(e.Policy, e.Mode)
	if int(e.Kind) < len(outcomeSlot) && outcomeSlot[e.Kind] > 0 {
		s.outcome(outcomeSlot[e.Kind] - 1).Inc()
		return
	}
	if int(e.Kind) < len(leaseSlot) && leaseSlot[e.Kind] > 0 {
		s.leaseEvent(leaseSlot[e.Kind] - 1).Inc()
		return
	}
	switch e.Kind {
	case throttle.StoreCall:
		s.storeCall(e.Op, e.Err, e.Latency.Seconds())
	case throttle.Released:
		s.hold(e.Reason).Observe(e.Hold.Seconds())
	}
	// Kinds added to the core later are ignored until they get a metric.
}

// outcomeSlot and leaseSlot give the slot, plus one, of an event kind's
// outcome (in outcomeNames) or lease event (in leaseNames); 0 for the
// kinds of the other metrics.
var (
	outcomeSlot = [...]int{throttle.Admitted: 1, throttle.Rejected: 2, throttle.DryRunRejected: 3,
		throttle.FailedOpen: 4, throttle.FailedClosed: 5, throttle.Fallback: 6, throttle.KeyError: 7,
		throttle.Replayed: 8, throttle.Shed: 9}
	leaseSlot = [...]int{throttle.Extended: 1, throttle.Lost: 2, throttle.FallbackOn: 3, throttle.FallbackOff: 4}
)

// series returns the series of a policy and mode, making them the first
// time.
func (o *Observer) series(policy string, mode throttle.Mode) *series {
	i := min(int(mode), len(modes{})-1)
	if m := (*o.index.Load())[policy]; m != nil {
		if s := m[i].Load(); s != nil {
			return s
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	old := *o.index.Load()
	m := old[policy]
	if m == nil {
		m = &modes{}
		next := make(map[string]*modes, len(old)+1)
		for k, v := range old {
			next[k] = v
		}
		next[policy] = m
		o.index.Store(&next)
	}
	if s := m[i].Load(); s != nil {
		return s
	}
	s := &series{o: o, policy: policy, mode: mode.String()}
	m[i].Store(s)
	return s
}

// keep publishes a resolved child in its slot and returns it. Two Observes
// racing to resolve the same slot get the same child from the vector, so
// either may win.
func keep[T any](slot *atomic.Pointer[T], child T) T {
	slot.Store(&child)
	return child
}

func (s *series) outcome(i int) prometheus.Counter {
	if c := s.outcomes[i].Load(); c != nil {
		return *c
	}
	return keep(&s.outcomes[i], s.o.requests.WithLabelValues(s.policy, s.mode, outcomeNames[i]))
}

func (s *series) leaseEvent(i int) prometheus.Counter {
	if c := s.leaseEvents[i].Load(); c != nil {
		return *c
	}
	return keep(&s.leaseEvents[i], s.o.leaseEvents.WithLabelValues(s.policy, leaseNames[i]))
}

func (s *series) hold(r throttle.ReleaseReason) prometheus.Observer {
	i := 3
	switch r {
	case throttle.ReleaseDone:
		i = 0
	case throttle.ReleaseFailed:
		i = 1
	case throttle.ReleasePanic:
		i = 2
	}
	if h := s.holdTime[i].Load(); h != nil {
		return *h
	}
	return keep(&s.holdTime[i], s.o.holdTime.WithLabelValues(s.policy, s.mode, reasonNames[i]))
}

// storeCall records one store call's latency and, when it failed, the
// error.
func (s *series) storeCall(op string, failed bool, seconds float64) {
	i := -1
	switch op {
	case "acquire":
		i = 0
	case "release":
		i = 1
	case "extend":
		i = 2
	case "quota":
		i = 3
	}
	if i < 0 {
		// An op the core added later: still a fixed name from its code,
		// never request data, so it is bounded; it just is not cached.
		s.o.storeTime.WithLabelValues(s.policy, op).Observe(seconds)
		if failed {
			s.o.storeErrors.WithLabelValues(s.policy, op).Inc()
		}
		return
	}
	s.storeTimer(i).Observe(seconds)
	if failed {
		s.storeError(i).Inc()
	}
}

func (s *series) storeTimer(i int) prometheus.Observer {
	if h := s.storeTime[i].Load(); h != nil {
		return *h
	}
	return keep(&s.storeTime[i], s.o.storeTime.WithLabelValues(s.policy, opNames[i]))
}

func (s *series) storeError(i int) prometheus.Counter {
	if c := s.storeErrors[i].Load(); c != nil {
		return *c
	}
	return keep(&s.storeErrors[i], s.o.storeErrors.WithLabelValues(s.policy, opNames[i]))
}

// Describe sends the descriptors of every metric the Observer exports,
// throttle_memstore_keys included even without WithMemstore. It implements
// prometheus.Collector.
func (o *Observer) Describe(ch chan<- *prometheus.Desc) {
	o.requests.Describe(ch)
	o.storeTime.Describe(ch)
	o.storeErrors.Describe(ch)
	o.holdTime.Describe(ch)
	o.leaseEvents.Describe(ch)
	ch <- o.keys
}

// Collect sends the current value of every series and, when the Observer
// was given memory stores, their key count, read now with
// memstore.Store.Len. It implements prometheus.Collector.
func (o *Observer) Collect(ch chan<- prometheus.Metric) {
	o.requests.Collect(ch)
	o.storeTime.Collect(ch)
	o.storeErrors.Collect(ch)
	o.holdTime.Collect(ch)
	o.leaseEvents.Collect(ch)
	if len(o.stores) == 0 {
		return
	}
	n := 0
	for _, st := range o.stores {
		n += st.Len()
	}
	ch <- prometheus.MustNewConstMetric(o.keys, prometheus.GaugeValue, float64(n))
}

var (
	_ throttle.Observer    = (*Observer)(nil)
	_ prometheus.Collector = (*Observer)(nil)
)
