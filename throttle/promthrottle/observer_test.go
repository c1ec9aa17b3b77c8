package promthrottle_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/promthrottle"
)

// TestLeaseEvents runs jobs under Lock.Do: one that lasts until its
// lease was extended, one that runs past MaxHold and loses it, and one that
// panics, and checks the lease events and the hold reasons.
func TestLeaseEvents(t *testing.T) {
	ctx := context.Background()
	obs := promthrottle.New()
	reg := newRegistry(t, obs)
	l := newLock(t, memstore.New(), obs, throttle.LockConfig{Name: "jobs", Mode: throttle.Exclusive,
		TTL: time.Second}) // refreshed every third, with room to spare on a loaded machine
	extended := func() float64 {
		return gather(t, reg).value(t, "throttle_lease_events_total", event("jobs", "extended"))
	}
	err := l.Do(ctx, "a", func(ctx context.Context) error {
		deadline := time.Now().Add(10 * time.Second)
		for extended() == 0 {
			if time.Now().After(deadline) {
				return errors.New("the lease was never extended")
			}
			time.Sleep(5 * time.Millisecond)
		}
		return nil
	})
	require.NoError(t, err, "Do until extended")

	capped := newLock(t, memstore.New(), obs, throttle.LockConfig{Name: "capped", Mode: throttle.Exclusive,
		MaxHold: 10 * time.Millisecond})
	err = capped.Do(ctx, "a", func(ctx context.Context) error {
		<-ctx.Done()
		return context.Cause(ctx)
	})
	require.ErrorIs(t, err, throttle.ErrLost, "Do past MaxHold")

	require.Panics(t, func() {
		_ = l.Do(ctx, "b", func(context.Context) error { panic("job failed") })
	}, "the job's panic was swallowed")

	fs := gather(t, reg)
	require.GreaterOrEqual(t, fs.value(t, "throttle_lease_events_total", event("jobs", "extended")), 1.0, "extended")
	require.Zero(t, fs.value(t, "throttle_lease_events_total", event("jobs", "lost")), "jobs lost leases")
	require.Equal(t, 1.0, fs.value(t, "throttle_lease_events_total", event("capped", "lost")), "capped lost leases")
	checkSeries(t, fs, "throttle_hold_duration_seconds", map[string]float64{
		hold("jobs", "exclusive", "done"):     1,
		hold("jobs", "exclusive", "panic"):    1,
		hold("capped", "exclusive", "failed"): 1,
	})
	// Do's acquisitions are outside any request: no outcome.
	checkSeries(t, fs, "throttle_requests_total", nil)
	require.GreaterOrEqual(t, fs.value(t, "throttle_store_duration_seconds", op("jobs", "extend")), 1.0, "extend calls timed")
}

// TestMemstoreGauge checks throttle_memstore_keys: the keys of every store
// given, each counted once, read at scrape time; no gauge without stores.
func TestMemstoreGauge(t *testing.T) {
	ctx := context.Background()
	a, b := memstore.New(), memstore.New()
	obs := promthrottle.New(a, b, a, nil)
	reg := newRegistry(t, obs)
	keys := func() map[string]float64 { return gather(t, reg).values(t, "throttle_memstore_keys") }
	require.Equal(t, map[string]float64{"": 0}, keys(), "empty stores")
	la := newLock(t, a, obs, throttle.LockConfig{Name: "a", Mode: throttle.Exclusive})
	lb := newQuota(t, b, obs, throttle.QuotaConfig{Name: "b"})
	var leases []*throttle.Lease
	for i := range 3 {
		lease, err := la.Acquire(ctx, strconv.Itoa(i))
		require.NoError(t, err, "acquire")
		leases = append(leases, lease)
	}
	for i := range 2 {
		_, err := lb.Allow(ctx, strconv.Itoa(i), throttle.Rate{Limit: 5, Window: time.Hour}, 1)
		require.NoError(t, err, "allow")
	}
	require.Equal(t, 5.0, keys()[""], "gauge with 5 keys held")
	require.NoError(t, leases[0].Release(ctx), "release")
	require.Equal(t, 4.0, keys()[""], "gauge after a release")
	for _, l := range leases[1:] {
		require.NoError(t, l.Release(ctx), "release")
	}

	none := promthrottle.New()
	observeAll(none, "x")
	require.Empty(t, gather(t, newRegistry(t, none)).values(t, "throttle_memstore_keys"), "gauge without stores")
}

// TestConcurrent observes from many goroutines, on policies seen for the
// first time, while the registry is scraped, and checks that no event was
// lost (and, under -race, that nothing races).
func TestConcurrent(t *testing.T) {
	obs := promthrottle.New()
	reg := newRegistry(t, obs)
	const workers, rounds, policies = 8, 500, 5
	stop := make(chan struct{})
	var scraper sync.WaitGroup
	scraper.Add(1)
	go func() {
		defer scraper.Done()
		for {
			select {
			case <-stop:
				return
			default:
				if _, err := reg.Gather(); !assert.NoError(t, err) {
					return
				}
			}
		}
	}()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				observeAll(obs, "p"+strconv.Itoa((w+i)%policies))
			}
		}()
	}
	wg.Wait()
	close(stop)
	scraper.Wait()

	fs := gather(t, reg)
	per := float64(workers * rounds / policies)
	for p := range policies {
		name := "p" + strconv.Itoa(p)
		for _, outcome := range []string{"admitted", "rejected", "dry_run_rejected", "failed_open",
			"failed_closed", "fallback", "key_error"} {
			assert.Equal(t, per, fs.value(t, "throttle_requests_total", req(name, "exclusive", outcome)), "%s %s", name, outcome)
		}
		for _, o := range []string{"acquire", "release", "extend", "quota"} {
			assert.Equal(t, 2*per, fs.value(t, "throttle_store_duration_seconds", op(name, o)), "%s %s calls", name, o)
			assert.Equal(t, per, fs.value(t, "throttle_store_errors_total", op(name, o)), "%s %s errors", name, o)
		}
		for _, ev := range []string{"extended", "lost", "fallback_on", "fallback_off"} {
			assert.Equal(t, per, fs.value(t, "throttle_lease_events_total", event(name, ev)), "%s %s", name, ev)
		}
		assert.Equal(t, per, fs.value(t, "throttle_hold_duration_seconds", hold(name, "exclusive", "done")), "%s holds", name)
	}
}

// TestOddEvents checks events outside the fixed sets: a store op and a
// release reason the core may add later are still counted, under their own
// names, and an unknown kind is ignored.
func TestOddEvents(t *testing.T) {
	obs := promthrottle.New()
	reg := newRegistry(t, obs)
	ctx := context.Background()
	obs.Observe(ctx, throttle.Event{Kind: "store_call", Policy: "p", Op: "watch", Err: true, Latency: time.Millisecond})
	obs.Observe(ctx, throttle.Event{Kind: "released", Policy: "p", Hold: time.Second})
	obs.Observe(ctx, throttle.Event{Kind: "released", Policy: "p", Hold: time.Second, Reason: "expired"})
	obs.Observe(ctx, throttle.Event{Kind: "no_such_kind", Policy: "p"})
	fs := gather(t, reg)
	checkSeries(t, fs, "throttle_store_duration_seconds", map[string]float64{op("p", "watch"): 1})
	checkSeries(t, fs, "throttle_store_errors_total", map[string]float64{op("p", "watch"): 1})
	checkSeries(t, fs, "throttle_hold_duration_seconds", map[string]float64{
		hold("p", "dedupe", "unknown"): 1,
		hold("p", "dedupe", "expired"): 1,
	})
	checkSeries(t, fs, "throttle_requests_total", nil)
	checkSeries(t, fs, "throttle_lease_events_total", nil)
}

// TestBuckets checks the histograms' bucket bounds: store calls from 50µs
// to 1s, holds from 1ms to 5 minutes, queueing delays from 100µs (the 5 ms
// target and the 100 ms interval of the overload queue are bounds) to 2.5s.
func TestBuckets(t *testing.T) {
	obs := promthrottle.New()
	observeAll(obs, "b")
	fs := gather(t, newRegistry(t, obs))
	bounds := func(name, labels string) []float64 {
		var out []float64
		for _, b := range histogram(t, fs, name, labels).GetBucket() {
			out = append(out, b.GetUpperBound())
		}
		return out
	}
	assert.Equal(t, []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1},
		bounds("throttle_store_duration_seconds", op("b", "acquire")), "store buckets")
	assert.Equal(t, []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		bounds("throttle_hold_duration_seconds", hold("b", "exclusive", "done")), "hold buckets")
	assert.Equal(t, []float64{0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5},
		bounds("throttle_overload_queue_duration_seconds", "policy=b"), "queueing delay buckets")
}

// TestRegisterTwice checks that a second Observer in the same registry is
// refused, as the documentation says: one Observer serves every policy.
func TestRegisterTwice(t *testing.T) {
	reg := newRegistry(t, promthrottle.New())
	var are prometheus.AlreadyRegisteredError
	require.ErrorAs(t, reg.Register(promthrottle.New()), &are, "second Observer")
}

// TestHelp pins each family's help text: the scrape is the package's
// output, and it must not change behind its users' backs.
func TestHelp(t *testing.T) {
	obs := promthrottle.New(memstore.New()).NearCaches(nearCache{}).Overload(newOverload(t, "h"))
	observeAll(obs, "h")
	help := map[string]string{}
	for name, mf := range gather(t, newRegistry(t, obs)) {
		help[name] = mf.GetHelp()
	}
	assert.Equal(t, map[string]string{
		"throttle_requests_total": "Requests decided by a throttle policy, by outcome: admitted, rejected, " +
			"dry_run_rejected, failed_open, failed_closed, fallback, key_error or replayed.",
		"throttle_store_duration_seconds": "Duration of a throttle policy's store calls (acquire, release, extend, quota), " +
			"failed ones included.",
		"throttle_store_errors_total":    "Store calls of a throttle policy that failed or timed out, by op.",
		"throttle_hold_duration_seconds": "How long a released key was held, by why it was released: done, failed or panic.",
		"throttle_lease_events_total": "Lease and store-health events of a throttle policy: extended, lost, " +
			"fallback_on, fallback_off.",
		"throttle_memstore_keys": "Keys (locks, fencing counters and quotas) held now in the in-memory stores " +
			"given to the observer.",
		"throttle_near_cache_hits_total": "Refusals of a throttle policy that the Redis store's near cache answered " +
			"without a store call.",
		"throttle_near_cache_invalidations_total": "Refusals the near caches of the Redis stores given to the observer " +
			"dropped because Redis reported a change of their key, or their tracking connection was lost.",
		"throttle_overload_limit": "Requests an overload limiter lets be in flight now (its adaptive limit; half of it " +
			"while a probe measures the base latency).",
		"throttle_overload_in_flight": "Requests holding a permit of an overload limiter now, NeverShed ones included.",
		"throttle_overload_queued":    "Requests waiting in an overload limiter's queue now.",
		"throttle_overload_base_latency_seconds": "The latency an overload limiter's limit aims near: the median of " +
			"requests that did not wait for each other (0 until measured).",
		"throttle_overload_shed_total": "Requests an overload limiter shed, by reason: limit (ShedFirst with no permit " +
			"free), queue-timeout or queue-full.",
		"throttle_overload_canceled_total": "Requests that left an overload limiter's queue because their context ended " +
			"(the client gave up) before a permit was free.",
		"throttle_overload_queue_duration_seconds": "How long requests an overload limiter admitted waited in its queue " +
			"(0 for those admitted at once).",
	}, help)
}
