package promthrottle_test

import (
	"context"
	"errors"
	"math"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/promthrottle"
)

// TestLeaseEvents runs jobs under Limiter.Do: one that lasts until its
// lease was extended, one that runs past MaxHold and loses it, and one that
// panics, and checks the lease events and the hold reasons.
func TestLeaseEvents(t *testing.T) {
	ctx := context.Background()
	obs := promthrottle.New()
	reg := newRegistry(t, obs)
	l := newLimiter(t, memstore.New(), obs, throttle.Policy{Name: "jobs", Mode: throttle.Exclusive,
		LeaseTTL: 30 * time.Millisecond})
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
	must(t, err, "Do until extended")

	capped := newLimiter(t, memstore.New(), obs, throttle.Policy{Name: "capped", Mode: throttle.Exclusive,
		MaxHold: 10 * time.Millisecond})
	err = capped.Do(ctx, "a", func(ctx context.Context) error {
		<-ctx.Done()
		return context.Cause(ctx)
	})
	if !errors.Is(err, throttle.ErrLost) {
		t.Fatalf("Do past MaxHold: %v, want ErrLost", err)
	}

	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the job's panic was swallowed")
			}
		}()
		_ = l.Do(ctx, "b", func(context.Context) error { panic("job failed") })
	}()

	fs := gather(t, reg)
	if n := fs.value(t, "throttle_lease_events_total", event("jobs", "extended")); n < 1 {
		t.Fatalf("extended %v, want at least 1", n)
	}
	if n := fs.value(t, "throttle_lease_events_total", event("jobs", "lost")); n != 0 {
		t.Fatalf("jobs lost %v leases", n)
	}
	if n := fs.value(t, "throttle_lease_events_total", event("capped", "lost")); n != 1 {
		t.Fatalf("capped lost %v leases, want 1", n)
	}
	checkSeries(t, fs, "throttle_hold_duration_seconds", map[string]float64{
		hold("jobs", "exclusive", "done"):     1,
		hold("jobs", "exclusive", "panic"):    1,
		hold("capped", "exclusive", "failed"): 1,
	})
	// Do's acquisitions are outside any request: no outcome.
	checkSeries(t, fs, "throttle_requests_total", nil)
	if n := fs.value(t, "throttle_store_duration_seconds", op("jobs", "extend")); n < 1 {
		t.Fatalf("%v extend calls timed", n)
	}
}

// TestMemstoreGauge checks throttle_memstore_keys: the keys of every store
// given, each counted once, read at scrape time; no gauge without stores.
func TestMemstoreGauge(t *testing.T) {
	ctx := context.Background()
	a, b := memstore.New(), memstore.New()
	obs := promthrottle.New(promthrottle.WithMemstore(a), promthrottle.WithMemstore(b, a, nil))
	reg := newRegistry(t, obs)
	keys := func() map[string]float64 { return gather(t, reg).values(t, "throttle_memstore_keys") }
	if got := keys(); got[""] != 0 || len(got) != 1 {
		t.Fatalf("empty stores: gauge %v", got)
	}
	la := newLimiter(t, a, obs, throttle.Policy{Name: "a", Mode: throttle.Exclusive})
	lb := newLimiter(t, b, obs, throttle.Policy{Name: "b", Mode: throttle.Quota, Limit: 5, Window: time.Hour})
	var leases []*throttle.Lease
	for i := range 3 {
		lease, err := la.Acquire(ctx, strconv.Itoa(i))
		must(t, err, "acquire")
		leases = append(leases, lease)
	}
	for i := range 2 {
		_, err := lb.Allow(ctx, strconv.Itoa(i))
		must(t, err, "allow")
	}
	if got := keys()[""]; got != 5 {
		t.Fatalf("gauge %v with 5 keys held", got)
	}
	must(t, leases[0].Release(ctx), "release")
	if got := keys()[""]; got != 4 {
		t.Fatalf("gauge %v after a release, want 4", got)
	}
	for _, l := range leases[1:] {
		must(t, l.Release(ctx), "release")
	}

	none := promthrottle.New()
	observeAll(none, "x")
	if got := gather(t, newRegistry(t, none)).values(t, "throttle_memstore_keys"); len(got) != 0 {
		t.Fatalf("gauge %v without WithMemstore", got)
	}
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
				if _, err := reg.Gather(); err != nil {
					t.Error(err)
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
			if n := fs.value(t, "throttle_requests_total", req(name, "exclusive", outcome)); n != per {
				t.Errorf("%s %s: %v, want %v", name, outcome, n, per)
			}
		}
		for _, o := range []string{"acquire", "release", "extend", "quota"} {
			if n := fs.value(t, "throttle_store_duration_seconds", op(name, o)); n != 2*per {
				t.Errorf("%s %s calls: %v, want %v", name, o, n, 2*per)
			}
			if n := fs.value(t, "throttle_store_errors_total", op(name, o)); n != per {
				t.Errorf("%s %s errors: %v, want %v", name, o, n, per)
			}
		}
		for _, ev := range []string{"extended", "lost", "fallback_on", "fallback_off"} {
			if n := fs.value(t, "throttle_lease_events_total", event(name, ev)); n != per {
				t.Errorf("%s %s: %v, want %v", name, ev, n, per)
			}
		}
		if n := fs.value(t, "throttle_hold_duration_seconds", hold(name, "exclusive", "done")); n != per {
			t.Errorf("%s holds: %v, want %v", name, n, per)
		}
	}
}

// TestOddEvents checks events outside the fixed sets: a store op and a
// release reason the core may add later are still counted, under their own
// names, and an unknown kind is ignored.
func TestOddEvents(t *testing.T) {
	obs := promthrottle.New()
	reg := newRegistry(t, obs)
	ctx := context.Background()
	obs.Observe(ctx, throttle.Event{Kind: throttle.StoreCall, Policy: "p", Op: "watch", Err: true, Latency: time.Millisecond})
	obs.Observe(ctx, throttle.Event{Kind: throttle.Released, Policy: "p", Hold: time.Second})
	obs.Observe(ctx, throttle.Event{Kind: throttle.EventKind(200), Policy: "p"})
	fs := gather(t, reg)
	checkSeries(t, fs, "throttle_store_duration_seconds", map[string]float64{op("p", "watch"): 1})
	checkSeries(t, fs, "throttle_store_errors_total", map[string]float64{op("p", "watch"): 1})
	checkSeries(t, fs, "throttle_hold_duration_seconds", map[string]float64{hold("p", "dedupe", "unknown"): 1})
	checkSeries(t, fs, "throttle_requests_total", nil)
	checkSeries(t, fs, "throttle_lease_events_total", nil)
}

// TestBuckets checks WithStoreBuckets and WithHoldBuckets, and that New
// refuses bounds the client would only refuse at the first request.
func TestBuckets(t *testing.T) {
	obs := promthrottle.New(promthrottle.WithStoreBuckets(0.01, 0.1), promthrottle.WithHoldBuckets(60, 3600, 86400))
	observeAll(obs, "b")
	fs := gather(t, newRegistry(t, obs))
	bounds := func(name, labels string) []float64 {
		var out []float64
		for _, b := range histogram(t, fs, name, labels).GetBucket() {
			out = append(out, b.GetUpperBound())
		}
		return out
	}
	if got := bounds("throttle_store_duration_seconds", op("b", "acquire")); len(got) != 2 || got[0] != 0.01 || got[1] != 0.1 {
		t.Errorf("store buckets %v", got)
	}
	if got := bounds("throttle_hold_duration_seconds", hold("b", "exclusive", "done")); len(got) != 3 || got[2] != 86400 {
		t.Errorf("hold buckets %v", got)
	}
	for _, bad := range [][]float64{nil, {0, 1}, {1, 1}, {2, 1}, {1, math.Inf(1)}, {math.NaN()}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("WithStoreBuckets(%v) accepted", bad)
				}
			}()
			promthrottle.New(promthrottle.WithStoreBuckets(bad...))
		}()
	}
}

// TestRegisterTwice checks that a second Observer in the same registry is
// refused, as the documentation says: one Observer serves every policy.
func TestRegisterTwice(t *testing.T) {
	reg := newRegistry(t, promthrottle.New())
	var are prometheus.AlreadyRegisteredError
	if err := reg.Register(promthrottle.New()); !errors.As(err, &are) {
		t.Fatalf("second Observer: %v, want AlreadyRegisteredError", err)
	}
}
