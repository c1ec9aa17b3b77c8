package adaptertest

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// planRates gives a user whose id starts with "pro-" three times the rate
// of the others: the suite's quota per plan.
func planRates(r *http.Request, _ string) throttle.Rate {
	if strings.HasPrefix(r.Header.Get(UserHeader), "pro-") {
		return throttle.Rate{Limit: 6, Window: time.Minute}
	}
	return throttle.Rate{Limit: 2, Window: time.Minute}
}

// testRatePerRequest checks a quota whose rate is a function of the
// request: each user gets the rate of their plan, and the fields say it.
func testRatePerRequest(t *testing.T, a Adapter) {
	h := a.Wrap(perRequest(a, newSearch(t), planRates), UserKey(), &statusHandler{})
	for range 2 {
		rec := Serve(h, Submit("free"))
		Status(t, rec, http.StatusOK)
		assert.Equal(t, `"search";q=2;w=60`, rec.Header().Get("RateLimit-Policy"))
	}
	rec := Serve(h, Submit("free"))
	Status(t, rec, http.StatusTooManyRequests)
	assert.Equal(t, `"search";q=2;w=60`, rec.Header().Get("RateLimit-Policy"))
	for range 6 {
		rec := Serve(h, Submit("pro-1"))
		Status(t, rec, http.StatusOK)
		assert.Equal(t, `"search";q=6;w=60`, rec.Header().Get("RateLimit-Policy"))
	}
	Status(t, Serve(h, Submit("pro-1")), http.StatusTooManyRequests)
}

// stackedField matches the RateLimit field of the suite's stacked rates,
// burst first.
var stackedField = regexp.MustCompile(`^"burst";r=(\d);t=\d+, "hourly";r=(\d+);t=\d+$`)

// testStackedRates checks two rates decided as one: both listed, most
// restrictive first, a refusal charged to neither, Retry-After when both
// allow, and no rate ever exceeded under concurrency.
func testStackedRates(t *testing.T, a Adapter) {
	rates := []throttle.Rate{{Name: "burst", Limit: 3, Window: 30 * time.Second}, {Name: "hourly", Limit: 20, Window: time.Hour}}
	h := a.Wrap(guard.Quota(newSearch(t), rates), UserKey(), &statusHandler{})
	for i := range 3 {
		rec := Serve(h, Submit("u1"))
		Status(t, rec, http.StatusOK)
		assert.Equal(t, `"burst";q=3;w=30, "hourly";q=20;w=3600`, rec.Header().Get("RateLimit-Policy"))
		m := stackedField.FindStringSubmatch(rec.Header().Get("RateLimit"))
		require.NotNil(t, m, "RateLimit %q", rec.Header().Get("RateLimit"))
		assert.Equal(t, []string{strconv.Itoa(2 - i), strconv.Itoa(19 - i)}, m[1:], "r of both")
	}
	for range 2 {
		rec := Serve(h, Submit("u1"))
		Status(t, rec, http.StatusTooManyRequests)
		m := stackedField.FindStringSubmatch(rec.Header().Get("RateLimit"))
		require.NotNil(t, m, "RateLimit %q", rec.Header().Get("RateLimit"))
		assert.Equal(t, []string{"0", "17"}, m[1:], "a refusal was charged")
		assert.Equal(t, "10", rec.Header().Get("Retry-After"), "when one request fits both")
	}

	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for range 6 {
		wg.Go(func() {
			for range 5 {
				if Serve(h, Submit("u2")).Code == http.StatusOK {
					mu.Lock()
					admitted++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 3, admitted, "concurrent requests admitted")
	rec := Serve(h, Submit("u2"))
	assert.Contains(t, rec.Header().Get("RateLimit"), `"hourly";r=17;`, "refusals charged under concurrency")
}

// testHolders checks an Exclusive lock of two holders: two requests of a
// key run at once, a third gets 409 with q=2 until one returns.
func testHolders(t *testing.T, a Adapter) {
	l, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "exports", Mode: throttle.Exclusive, Holders: 2})
	require.NoError(t, err)
	inside, release := make(chan struct{}, 2), make(chan struct{})
	h := a.Wrap(guard.Lock(l), UserKey(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inside <- struct{}{}
		<-release
		w.WriteHeader(http.StatusOK)
	}))
	var wg sync.WaitGroup
	for i := range 2 {
		done := make(chan int, 1)
		wg.Go(func() { done <- Serve(h, Submit("u")).Code })
		select {
		case <-inside:
		case code := <-done:
			t.Fatalf("request %d of two in flight answered %d without running", i+1, code)
		}
	}
	rec := Serve(h, Submit("u"))
	Status(t, rec, http.StatusConflict)
	assert.Equal(t, `"exports";q=2;qu="concurrent-requests"`, rec.Header().Get("RateLimit-Policy"))
	close(release)
	wg.Wait()
	Status(t, Serve(h, Submit("u")), http.StatusOK)
}
