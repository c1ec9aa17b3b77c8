package promthrottle_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/promthrottle"
	"github.com/go-throttle/throttle/throttle/store"
)

// errDown is a failing store's error. It wraps store.ErrNotApplied (the
// call changed nothing), which is true of these stores and spares the
// Limiter a background release of keys they never took.
var errDown = fmt.Errorf("promthrottle test: store down: %w", store.ErrNotApplied)

// failingStore is a memstore whose calls fail while the flag of their op is
// set.
type failingStore struct {
	*memstore.Store
	acquire, release, quota atomic.Bool
}

func (f *failingStore) Acquire(ctx context.Context, req store.Request) (store.Grant, error) {
	if f.acquire.Load() {
		return store.Grant{}, errDown
	}
	return f.Store.Acquire(ctx, req)
}

func (f *failingStore) Release(ctx context.Context, key, token string) (store.Outcome, error) {
	if f.release.Load() {
		return 0, errDown
	}
	return f.Store.Release(ctx, key, token)
}

func (f *failingStore) AllowN(ctx context.Context, key string, r store.Rate, cost int) (store.Decision, error) {
	if f.quota.Load() {
		return store.Decision{}, errDown
	}
	return f.Store.AllowN(ctx, key, r, cost)
}

// serve sends a POST as user through h and returns the status.
func serve(h http.Handler, path, user string) int {
	r := httptest.NewRequest(http.MethodPost, path, nil)
	r.Header.Set(userHeader, user)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec.Code
}

// TestStoreFails checks that requests a failing store could not decide are
// counted failed_open or failed_closed as their policy says, that every
// failed call is a store error of its op, and that the counts agree with
// the Limiter's own Stats.
func TestStoreFails(t *testing.T) {
	obs := promthrottle.New()
	reg := newRegistry(t, obs)
	st := &failingStore{Store: memstore.New()}
	st.acquire.Store(true)
	st.release.Store(true)
	st.quota.Store(true)
	cases := []struct {
		p      throttle.Policy
		status int
	}{
		{throttle.Policy{Name: "open", WhenStoreFails: throttle.FailOpen}, http.StatusCreated},
		{throttle.Policy{Name: "closed", WhenStoreFails: throttle.FailClosed}, http.StatusServiceUnavailable},
		{throttle.Policy{Name: "quota-open", Mode: throttle.Quota, Limit: 5, WhenStoreFails: throttle.FailOpen}, http.StatusCreated},
		{throttle.Policy{Name: "quota-closed", Mode: throttle.Quota, Limit: 5, WhenStoreFails: throttle.FailClosed}, http.StatusServiceUnavailable},
	}
	limiters := map[string]*throttle.Limiter{}
	for _, c := range cases {
		l := newLimiter(t, st, obs, c.p)
		limiters[c.p.Name] = l
		h := guarded(l, app)
		for i := range 3 {
			if got := serve(h, "/", "user-"+strconv.Itoa(i)); got != c.status {
				t.Fatalf("%s: status %d, want %d", c.p.Name, got, c.status)
			}
		}
	}
	// An Exclusive request whose release fails: taken, run, and the
	// release's error counted.
	st.acquire.Store(false)
	excl := newLimiter(t, st, obs, throttle.Policy{Name: "release-fails", Mode: throttle.Exclusive})
	if got := serve(guarded(excl, app), "/?status=200", "u"); got != http.StatusOK {
		t.Fatalf("release-fails: status %d", got)
	}

	fs := gather(t, reg)
	checkSeries(t, fs, "throttle_requests_total", map[string]float64{
		req("open", "dedupe", "failed_open"):          3,
		req("closed", "dedupe", "failed_closed"):      3,
		req("quota-open", "quota", "failed_open"):     3,
		req("quota-closed", "quota", "failed_closed"): 3,
		req("release-fails", "exclusive", "admitted"): 1,
	})
	checkSeries(t, fs, "throttle_store_errors_total", map[string]float64{
		op("open", "acquire"):          3,
		op("closed", "acquire"):        3,
		op("quota-open", "quota"):      3,
		op("quota-closed", "quota"):    3,
		op("release-fails", "release"): 1,
	})
	checkSeries(t, fs, "throttle_store_duration_seconds", map[string]float64{
		op("open", "acquire"):          3,
		op("closed", "acquire"):        3,
		op("quota-open", "quota"):      3,
		op("quota-closed", "quota"):    3,
		op("release-fails", "acquire"): 1,
		op("release-fails", "release"): 1,
	})
	// The key could not be given back (it expires by itself): that is no
	// release, and no hold time.
	checkSeries(t, fs, "throttle_hold_duration_seconds", nil)
	for name, l := range limiters {
		s, mode := l.Stats(), l.Policy().Mode.String()
		failedOpen := fs.value(t, "throttle_requests_total", req(name, mode, "failed_open"))
		storeErrors := fs.value(t, "throttle_store_errors_total", op(name, "acquire")) +
			fs.value(t, "throttle_store_errors_total", op(name, "quota"))
		if float64(s.FailedOpen) != failedOpen || float64(s.StoreErrors) != storeErrors {
			t.Errorf("%s: Stats %+v, but the metrics say failed_open %v, store errors %v",
				name, s, failedOpen, storeErrors)
		}
	}
}

// TestFailOver checks the fallback outcome and the FailOver switches: a
// policy whose store fails is admitted by its fallback, switches to it
// after three failures in a row (fallback_on), and back once the store
// answers again (fallback_off).
func TestFailOver(t *testing.T) {
	obs := promthrottle.New()
	reg := newRegistry(t, obs)
	st := &failingStore{Store: memstore.New()}
	st.acquire.Store(true)
	l := newLimiter(t, st, obs, throttle.Policy{Name: "over", WhenStoreFails: throttle.FailOver,
		Fallback: memstore.New()})
	h := guarded(l, app)
	for i := range 4 {
		if got := serve(h, "/", "user-"+strconv.Itoa(i)); got != http.StatusCreated {
			t.Fatalf("request %d: status %d", i, got)
		}
	}
	fs := gather(t, reg)
	checkSeries(t, fs, "throttle_requests_total", map[string]float64{req("over", "dedupe", "fallback"): 4})
	checkSeries(t, fs, "throttle_lease_events_total", map[string]float64{event("over", "fallback_on"): 1})
	// Three failures switch to the fallback; the fourth request does not
	// ask the store.
	checkSeries(t, fs, "throttle_store_errors_total", map[string]float64{op("over", "acquire"): 3})

	// Once the store answers, the next probe (within a second) switches
	// back.
	st.acquire.Store(false)
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; gather(t, reg).value(t, "throttle_lease_events_total", event("over", "fallback_off")) == 0; i++ {
		if time.Now().After(deadline) {
			t.Fatal("no fallback_off after the store came back")
		}
		serve(h, "/", "later-"+strconv.Itoa(i))
		time.Sleep(20 * time.Millisecond)
	}
	fs = gather(t, reg)
	if n := fs.value(t, "throttle_lease_events_total", event("over", "fallback_off")); n != 1 {
		t.Fatalf("fallback_off %v, want 1", n)
	}
	if n := fs.value(t, "throttle_lease_events_total", event("over", "fallback_on")); n != 1 {
		t.Fatalf("fallback_on %v, want 1", n)
	}
}
