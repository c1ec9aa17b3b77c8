package promthrottle

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/go-throttle/throttle/internal/obskit"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// Observer counts the events of every limiter whose Options name it, told
// apart by the policy label. It is a throttle.Observer and a
// prometheus.Collector; register one per registry. It is safe for
// concurrent use.
type Observer struct {
	requests, storeErrors, leaseEvents, nearHits *prometheus.CounterVec
	storeTime, holdTime, queueTime               *prometheus.HistogramVec
	keys, invalidations                          *prometheus.Desc
	stores                                       []*memstore.Store
	near                                         storekit.NearCounters
	overload                                     overloadDescs
	overloads                                    obskit.Overloads

	// index holds each policy's series by mode, copied on write under mu
	// so that Observe reads it without a lock.
	index atomic.Pointer[map[string]*modes]
	mu    sync.Mutex
}

// modes are a policy's series by throttle.Mode (two limiters may share a
// name under different modes); the last serves every mode the core does
// not define, labelled "unknown".
type modes [throttle.ModeOverload + 2]series

// series holds one policy and mode's metric children by label value,
// each resolved from its vector at its first event and kept: the series
// appears in the scrape then, and afterwards Observe neither asks the
// vector (which hashes every label value under a lock) nor allocates.
type series struct {
	policy, mode                            string
	outcomes, leaseEvents, errors, nearHits children[prometheus.Counter]
	storeTime, holdTime, queueTime          children[prometheus.Observer]
}

// children maps label values to metric children, copied on write.
type children[T any] struct{ m atomic.Pointer[map[string]T] }

// get returns the child of label, if it was kept.
func (c *children[T]) get(label string) (T, bool) {
	if m := c.m.Load(); m != nil {
		v, ok := (*m)[label]
		return v, ok
	}
	var none T
	return none, false
}

// keep keeps v as the child of label, and returns it. Two goroutines
// racing to keep the same label get the same child from its vector, so
// either may win.
func (c *children[T]) keep(mu *sync.Mutex, label string, v T) T {
	mu.Lock()
	defer mu.Unlock()
	next := map[string]T{}
	if m := c.m.Load(); m != nil {
		next = maps.Clone(*m)
	}
	next[label] = v
	c.m.Store(&next)
	return v
}

// New returns an Observer. The memory stores given (pass every memstore of
// the process, FailOver fallbacks included) are counted together in the
// gauge throttle_memstore_keys at each scrape; without stores there is none.
func New(stores ...*memstore.Store) *Observer {
	o := &Observer{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "throttle_requests_total",
			Help: "Requests decided by a throttle policy, by outcome: admitted, rejected, dry_run_rejected, " +
				"failed_open, failed_closed, fallback, key_error or replayed.",
		}, []string{"policy", "mode", "outcome"}),
		storeTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "throttle_store_duration_seconds",
			Help: "Duration of a throttle policy's store calls (acquire, release, extend, quota), failed ones included.",
			Buckets: []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
				0.1, 0.25, 0.5, 1},
		}, []string{"policy", "op"}),
		storeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "throttle_store_errors_total",
			Help: "Store calls of a throttle policy that failed or timed out, by op.",
		}, []string{"policy", "op"}),
		holdTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "throttle_hold_duration_seconds",
			Help: "How long a released key was held, by why it was released: done, failed or panic.",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
				30, 60, 120, 300},
		}, []string{"policy", "mode", "reason"}),
		leaseEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "throttle_lease_events_total",
			Help: "Lease and store-health events of a throttle policy: extended, lost, fallback_on, fallback_off.",
		}, []string{"policy", "event"}),
		keys: prometheus.NewDesc("throttle_memstore_keys",
			"Keys (locks, fencing counters and quotas) held now in the in-memory stores given to the observer.",
			nil, nil),
		nearHits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "throttle_near_cache_hits_total",
			Help: "Refusals of a throttle policy that the Redis store's near cache answered without a store call.",
		}, []string{"policy", "mode"}),
		invalidations: prometheus.NewDesc("throttle_near_cache_invalidations_total",
			"Refusals the near caches of the Redis stores given to the observer dropped because Redis reported "+
				"a change of their key, or their tracking connection was lost.", nil, nil),
		queueTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "throttle_overload_queue_duration_seconds",
			Help: "How long requests an overload limiter admitted waited in its queue (0 for those admitted at once).",
			Buckets: []float64{0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
				2.5},
		}, []string{"policy"}),
		overload: newOverloadDescs(),
	}
	for _, st := range stores {
		if st != nil && !slices.Contains(o.stores, st) {
			o.stores = append(o.stores, st)
		}
	}
	o.index.Store(&map[string]*modes{})
	return o
}

// Observe counts e, implementing throttle.Observer; once e's series exist
// it takes no lock and allocates nothing.
func (o *Observer) Observe(_ context.Context, e throttle.Event) {
	s := o.series(e.Policy, e.Mode)
	switch e.Kind {
	case "admitted", "rejected", "dry_run_rejected", "failed_open", "failed_closed", "shed", "full", "fallback",
		"key_error", "replayed":
		o.outcome(s, e)
	case "extended", "lost", "fallback_on", "fallback_off":
		c, ok := s.leaseEvents.get(e.Kind)
		if !ok {
			c = s.leaseEvents.keep(&o.mu, e.Kind, o.leaseEvents.WithLabelValues(s.policy, e.Kind))
		}
		c.Inc()
	case "store_call":
		h, ok := s.storeTime.get(e.Op)
		if !ok {
			h = s.storeTime.keep(&o.mu, e.Op, o.storeTime.WithLabelValues(s.policy, e.Op))
		}
		h.Observe(e.Latency.Seconds())
		if e.Err {
			c, ok := s.errors.get(e.Op)
			if !ok {
				c = s.errors.keep(&o.mu, e.Op, o.storeErrors.WithLabelValues(s.policy, e.Op))
			}
			c.Inc()
		}
	case "released":
		reason := cmp.Or(e.Reason, "unknown")
		h, ok := s.holdTime.get(reason)
		if !ok {
			h = s.holdTime.keep(&o.mu, reason, o.holdTime.WithLabelValues(s.policy, s.mode, reason))
		}
		h.Observe(e.Hold.Seconds())
	case "near_hit":
		c, ok := s.nearHits.get("")
		if !ok {
			c = s.nearHits.keep(&o.mu, "", o.nearHits.WithLabelValues(s.policy, s.mode))
		}
		c.Inc()
	}
}

// outcome counts the outcome of e, a request's decision, and times how
// long an overload limiter's admission waited in its queue.
func (o *Observer) outcome(s *series, e throttle.Event) {
	c, ok := s.outcomes.get(e.Kind)
	if !ok {
		c = s.outcomes.keep(&o.mu, e.Kind, o.requests.WithLabelValues(s.policy, s.mode, e.Kind))
	}
	c.Inc()
	if e.Kind == "admitted" && e.Mode == throttle.ModeOverload {
		h, ok := s.queueTime.get("")
		if !ok {
			h = s.queueTime.keep(&o.mu, "", o.queueTime.WithLabelValues(s.policy))
		}
		h.Observe(e.Latency.Seconds())
	}
}

// NearCache is a store with a near cache of refusals: *redisstore.Store,
// which rueidisstore.New returns too.
type NearCache interface {
	NearCacheStats() storekit.NearStats
}

// NearCaches makes each scrape read the near caches of stores, counted
// together in throttle_near_cache_invalidations_total (without stores
// there is none; their hits are counted by policy from the limiters'
// events), and returns o.
func (o *Observer) NearCaches(stores ...NearCache) *Observer {
	for _, st := range stores {
		o.near.Add(st)
	}
	return o
}

// series returns the series of a policy and mode, making the policy's the
// first time.
func (o *Observer) series(policy string, mode throttle.Mode) *series {
	i := min(int(mode), len(modes{})-1)
	if m := (*o.index.Load())[policy]; m != nil {
		return &m[i]
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	old := *o.index.Load()
	m := old[policy]
	if m == nil {
		m = &modes{}
		for j := range m {
			m[j].policy, m[j].mode = policy, throttle.Mode(j).String()
		}
		next := maps.Clone(old)
		next[policy] = m
		o.index.Store(&next)
	}
	return &m[i]
}

// Describe sends the descriptors of every metric, throttle_memstore_keys
// and the overload limiters' included even without stores or limiters. It implements prometheus.Collector.
func (o *Observer) Describe(ch chan<- *prometheus.Desc) {
	o.requests.Describe(ch)
	o.storeTime.Describe(ch)
	o.storeErrors.Describe(ch)
	o.holdTime.Describe(ch)
	o.leaseEvents.Describe(ch)
	o.nearHits.Describe(ch)
	o.queueTime.Describe(ch)
	o.overload.describe(ch)
	ch <- o.keys
	ch <- o.invalidations
}

// Collect sends every series, and the stores' key count and the overload
// limiters' state, read now. It
// implements prometheus.Collector.
func (o *Observer) Collect(ch chan<- prometheus.Metric) {
	o.requests.Collect(ch)
	o.storeTime.Collect(ch)
	o.storeErrors.Collect(ch)
	o.holdTime.Collect(ch)
	o.leaseEvents.Collect(ch)
	o.nearHits.Collect(ch)
	o.queueTime.Collect(ch)
	o.overload.collect(&o.overloads, ch)
	if n, ok := o.near.Invalidations(); ok {
		ch <- prometheus.MustNewConstMetric(o.invalidations, prometheus.CounterValue, float64(n))
	}
	if len(o.stores) == 0 {
		return
	}
	n := 0
	for _, st := range o.stores {
		n += st.Len()
	}
	ch <- prometheus.MustNewConstMetric(o.keys, prometheus.GaugeValue, float64(n))
}
