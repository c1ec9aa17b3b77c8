package throttle_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// recorder is an Observer that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []throttle.Event
}

func (r *recorder) Observe(_ context.Context, e throttle.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// take returns the events so far and forgets them.
func (r *recorder) take() []throttle.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

// kinds returns the kinds of events, store calls as "store_call:op".
func kinds(events []throttle.Event) []string {
	var out []string
	for _, e := range events {
		k := e.Kind.String()
		if e.Kind == throttle.StoreCall {
			k += ":" + e.Op
			if e.Err {
				k += "!"
			}
		}
		out = append(out, k)
	}
	return out
}

func TestObserverAdmissions(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	l := newLimiter(t, memstore.New(), throttle.Policy{Name: "obs", Observer: rec})
	lease, err := l.Admit(ctx, "u1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Admit(ctx, "u1"); !errors.Is(err, throttle.ErrContended) {
		t.Fatal(err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	events := rec.take()
	want := []string{"store_call:acquire", "admitted", "store_call:acquire", "rejected", "store_call:release"}
	if got := kinds(events); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	for _, e := range events {
		if e.Policy != "obs" || e.Mode != throttle.Dedupe {
			t.Fatalf("event %+v lacks the policy", e)
		}
		if e.Kind == throttle.StoreCall && e.Latency <= 0 {
			t.Fatalf("store call without a latency: %+v", e)
		}
	}
	if e := events[3]; e.RetryAfter <= 0 || e.RetryAfter > throttle.DefaultWindow {
		t.Fatalf("rejection's RetryAfter %v", e.RetryAfter)
	}
}

func TestObserverDryRunAndQuota(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	l := newLimiter(t, memstore.New(), throttle.Policy{Name: "q", Mode: throttle.Quota, Limit: 1,
		Window: time.Hour, DryRun: true, Observer: rec})
	if d, err := l.AdmitN(ctx, "u1", 1); err != nil || !d.Allowed {
		t.Fatal(d, err)
	}
	if _, err := l.AdmitN(ctx, "u1", 1); !errors.Is(err, throttle.ErrContended) {
		t.Fatal(err)
	}
	events := rec.take()
	want := []string{"store_call:quota", "admitted", "store_call:quota", "dry_run_rejected"}
	if got := kinds(events); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if events[1].Cost != 1 || events[3].RetryAfter <= 0 {
		t.Fatalf("events %+v", events)
	}
}

func TestObserverStoreFails(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		mode throttle.FailMode
		want []string
	}{
		{throttle.FailOpen, []string{"store_call:acquire!", "failed_open"}},
		{throttle.FailClosed, []string{"store_call:acquire!", "failed_closed"}},
	} {
		rec := &recorder{}
		l := newLimiter(t, brokenStore{}, throttle.Policy{Name: "down", WhenStoreFails: c.mode, Observer: rec, Logger: quiet})
		_, _ = l.Admit(ctx, "u1")
		if got := kinds(rec.take()); !slices.Equal(got, c.want) {
			t.Fatalf("%v: events %v, want %v", c.mode, got, c.want)
		}
	}
	// FailOver: the fallback admits, and after three failures in a row the
	// Limiter switches to it, once.
	rec := &recorder{}
	l := newLimiter(t, brokenStore{}, throttle.Policy{Name: "over", WhenStoreFails: throttle.FailOver,
		Fallback: memstore.New(), Observer: rec, Logger: quiet})
	for _, id := range []string{"a", "b", "c", "d"} {
		if _, err := l.Admit(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	got := kinds(rec.take())
	if n := count(got, "fallback"); n != 4 {
		t.Fatalf("events %v: %d fallback admissions, want 4", got, n)
	}
	if n := count(got, "fallback_on"); n != 1 {
		t.Fatalf("events %v: fallback switched on %d times, want 1", got, n)
	}
}

func count(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

func TestObserverDo(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	l := newLimiter(t, memstore.New(), throttle.Policy{Name: "job", Mode: throttle.Exclusive, LeaseTTL: 30 * time.Millisecond, Observer: rec})
	err := l.Do(ctx, "c1", func(context.Context) error {
		time.Sleep(40 * time.Millisecond) // past one refresh at TTL/3
		return errors.New("sync failed")
	})
	if err == nil {
		t.Fatal("Do lost the work's error")
	}
	events := rec.take()
	got := kinds(events)
	if count(got, "extended") < 1 || got[len(got)-1] != "released" {
		t.Fatalf("events %v: want extensions and a release last", got)
	}
	last := events[len(events)-1]
	if last.Reason != throttle.ReleaseFailed || last.Hold < 40*time.Millisecond {
		t.Fatalf("release %+v: want reason failed and the hold time", last)
	}
	func() {
		defer func() { _ = recover() }()
		_ = l.Do(ctx, "c2", func(context.Context) error { panic("boom") })
	}()
	if e := rec.take(); e[len(e)-1].Kind != throttle.Released || e[len(e)-1].Reason != throttle.ReleasePanic {
		t.Fatalf("events after a panic %v", kinds(e))
	}
}

func TestEventKindNames(t *testing.T) {
	for k := throttle.Admitted; k <= throttle.FallbackOff; k++ {
		if s := k.String(); s == "unknown" || s == "" {
			t.Errorf("kind %d has no name", k)
		}
	}
	if s := throttle.EventKind(200).String(); s != "unknown" {
		t.Errorf("kind 200 = %q", s)
	}
}

// BenchmarkObserver measures Limiter.Admit plus Lease.Release on a memory
// store, one goroutine, b.N distinct keys, with no Observer and with one
// that does nothing: what the events cost the core (two clock readings
// per store call, and the calls).
func BenchmarkObserver(b *testing.B) {
	for _, c := range []struct {
		name string
		obs  throttle.Observer
	}{{"none", nil}, {"noop", noop{}}} {
		b.Run(c.name, func(b *testing.B) {
			l := newLimiter(b, memstore.New(), throttle.Policy{Name: "bench", Observer: c.obs})
			ids := distinctIDs(b.N)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				lease, err := l.Admit(ctx, ids[i])
				if err != nil {
					b.Fatal(err)
				}
				_ = lease.Release(ctx)
			}
		})
	}
}

type noop struct{}

func (noop) Observe(context.Context, throttle.Event) {}

// distinctIDs returns n user ids, built before a benchmark's timer.
func distinctIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "user-" + strconv.Itoa(i)
	}
	return ids
}
