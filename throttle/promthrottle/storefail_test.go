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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/promthrottle"
	"github.com/go-throttle/throttle/throttle/store"
)

// errDown is a failing store's error. It wraps store.ErrNotApplied (the
// call changed nothing), which is true of these stores and spares the
// limiter a background release of keys they never took.
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
// the limiters' own Stats.
func TestStoreFails(t *testing.T) {
	obs := promthrottle.New()
	reg := newRegistry(t, obs)
	st := &failingStore{Store: memstore.New()}
	st.acquire.Store(true)
	st.release.Store(true)
	st.quota.Store(true)
	// limiter is one case's limiter: its guard, its Stats and its mode.
	type limiter struct {
		g     *guard.Guard
		stats func() throttle.Stats
		mode  string
	}
	lock := func(name string, fail throttle.FailMode) limiter {
		l := newLock(t, st, obs, throttle.LockConfig{Name: name, Options: throttle.Options{WhenStoreFails: fail}})
		return limiter{guard.Lock(l), l.Stats, l.Config().Mode.String()}
	}
	quota := func(name string, fail throttle.FailMode) limiter {
		q := newQuota(t, st, obs, throttle.QuotaConfig{Name: name, Options: throttle.Options{WhenStoreFails: fail}})
		return limiter{guard.Quota(q, throttle.Rate{Limit: 5, Window: time.Second}), q.Stats, throttle.ModeQuota.String()}
	}
	cases := []struct {
		name   string
		l      limiter
		status int
	}{
		{"open", lock("open", throttle.FailOpen), http.StatusCreated},
		{"closed", lock("closed", throttle.FailClosed), http.StatusServiceUnavailable},
		{"quota-open", quota("quota-open", throttle.FailOpen), http.StatusCreated},
		{"quota-closed", quota("quota-closed", throttle.FailClosed), http.StatusServiceUnavailable},
	}
	for _, c := range cases {
		h := guarded(c.l.g, app)
		for i := range 3 {
			require.Equal(t, c.status, serve(h, "/", "user-"+strconv.Itoa(i)), "%s: status", c.name)
		}
	}
	// An Exclusive request whose release fails: taken, run, and the
	// release's error counted.
	st.acquire.Store(false)
	excl := newLock(t, st, obs, throttle.LockConfig{Name: "release-fails", Mode: throttle.Exclusive})
	require.Equal(t, http.StatusOK, serve(guarded(guard.Lock(excl), app), "/?status=200", "u"), "release-fails: status")

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
	for _, c := range cases {
		s := c.l.stats()
		failedOpen := fs.value(t, "throttle_requests_total", req(c.name, c.l.mode, "failed_open"))
		storeErrors := fs.value(t, "throttle_store_errors_total", op(c.name, "acquire")) +
			fs.value(t, "throttle_store_errors_total", op(c.name, "quota"))
		assert.Equal(t, failedOpen, float64(s.FailedOpen), "%s: Stats %+v against the metrics' failed_open", c.name, s)
		assert.Equal(t, storeErrors, float64(s.StoreErrors), "%s: Stats %+v against the metrics' store errors", c.name, s)
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
	l := newLock(t, st, obs, throttle.LockConfig{Name: "over",
		Options: throttle.Options{WhenStoreFails: throttle.FailOver, Fallback: memstore.New()}})
	h := guarded(guard.Lock(l), app)
	for i := range 4 {
		require.Equal(t, http.StatusCreated, serve(h, "/", "user-"+strconv.Itoa(i)), "request %d: status", i)
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
		require.False(t, time.Now().After(deadline), "no fallback_off after the store came back")
		serve(h, "/", "later-"+strconv.Itoa(i))
		time.Sleep(20 * time.Millisecond)
	}
	fs = gather(t, reg)
	require.Equal(t, 1.0, fs.value(t, "throttle_lease_events_total", event("over", "fallback_off")), "fallback_off")
	require.Equal(t, 1.0, fs.value(t, "throttle_lease_events_total", event("over", "fallback_on")), "fallback_on")
}
