package guard_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/flow"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// serveAs serves one request of user id through g to a handler that
// answers 200, and returns the answer.
func serveAs(g *guard.Guard, id string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "/api/items", nil)
	r.Header.Set("X-User-ID", id)
	var rej guard.Rejection
	if ok := g.Serve(w, r, flow.Call{Route: "/api/items", ID: id}, &rej, func(*http.Request, *guard.Capture) int {
		w.WriteHeader(http.StatusOK)
		return http.StatusOK
	}); !ok {
		rej.Write(w)
	}
	return w
}

func newQuota(t *testing.T, name string) *throttle.Quota {
	t.Helper()
	q, err := throttle.NewQuota(memstore.New(), throttle.QuotaConfig{Name: name})
	require.NoError(t, err)
	return q
}

var (
	burst  = throttle.Rate{Name: "items-burst", Limit: 5, Window: 10 * time.Second}
	hourly = throttle.Rate{Name: "items-hourly", Limit: 30, Window: time.Hour}
)

// plan gives users whose id starts with "pro-" four times the rates.
func plan(_ *http.Request, id string) []throttle.Rate {
	if strings.HasPrefix(id, "pro-") {
		b, h := burst, hourly
		b.Limit, h.Limit = 4*b.Limit, 4*h.Limit
		return []throttle.Rate{b, h}
	}
	return []throttle.Rate{burst, hourly}
}

// TestRatePerRequest: a function's rate applies to each request, and the
// RateLimit fields show the rate that applied.
func TestRatePerRequest(t *testing.T) {
	g := guard.Quota(newQuota(t, "search"), func(_ *http.Request, id string) throttle.Rate {
		if strings.HasPrefix(id, "pro-") {
			return throttle.Rate{Limit: 20, Window: time.Minute}
		}
		return throttle.Rate{Limit: 2, Window: time.Minute}
	})
	for i := range 2 {
		w := serveAs(g, "free")
		require.Equal(t, http.StatusOK, w.Code, "free request %d", i)
		assert.Equal(t, `"search";q=2;w=60`, w.Header().Get("RateLimit-Policy"))
	}
	w := serveAs(g, "free")
	require.Equal(t, http.StatusTooManyRequests, w.Code, "third free request")
	assert.Equal(t, `"search";q=2;w=60`, w.Header().Get("RateLimit-Policy"))
	for i := range 20 {
		w := serveAs(g, "pro-1")
		require.Equal(t, http.StatusOK, w.Code, "pro request %d", i)
		assert.Equal(t, `"search";q=20;w=60`, w.Header().Get("RateLimit-Policy"))
		assert.Contains(t, w.Header().Get("RateLimit"), `"search";r=`+strconv.Itoa(19-i)+";")
	}
}

// TestStackedRates: two rates decided as one. Both are listed, most
// restrictive first; a request refused by one is charged to neither.
func TestStackedRates(t *testing.T) {
	g := guard.Quota(newQuota(t, "items"), plan)
	for i := range 5 {
		w := serveAs(g, "u")
		require.Equal(t, http.StatusOK, w.Code, "request %d", i)
		assert.Equal(t, `"items-burst";q=5;w=10, "items-hourly";q=30;w=3600`, w.Header().Get("RateLimit-Policy"))
		assert.Regexp(t, `^"items-burst";r=`+strconv.Itoa(4-i)+`;t=\d+, "items-hourly";r=`+strconv.Itoa(29-i)+`;t=\d+$`, w.Header().Get("RateLimit"))
	}
	for range 3 {
		w := serveAs(g, "u")
		require.Equal(t, http.StatusTooManyRequests, w.Code)
		assert.Regexp(t, `^"items-burst";r=0;t=\d+, "items-hourly";r=25;t=\d+$`, w.Header().Get("RateLimit"),
			"a refused request moved the hourly quota")
		assert.Equal(t, "2", w.Header().Get("Retry-After"), "Retry-After: when one request fits both")
		var p struct {
			Violated []string `json:"violated-policies"`
		}
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &p))
		assert.Equal(t, []string{"items-burst"}, p.Violated)
	}
	w := serveAs(g, "pro-u")
	require.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, `"items-burst";q=20;w=10, "items-hourly";q=120;w=3600`, w.Header().Get("RateLimit-Policy"))
}

// TestStackedOrder: the hourly rate comes first once it has fewer requests
// left than the burst rate.
func TestStackedOrder(t *testing.T) {
	g := guard.Quota(newQuota(t, "items"), []throttle.Rate{
		{Name: "burst", Limit: 100, Window: time.Second},
		{Name: "daily", Limit: 3, Window: 24 * time.Hour},
	})
	w := serveAs(g, "u")
	assert.Equal(t, `"daily";q=3;w=86400, "burst";q=100;w=1`, w.Header().Get("RateLimit-Policy"))
	assert.Regexp(t, `^"daily";r=2;t=\d+, "burst";r=99;t=\d+$`, w.Header().Get("RateLimit"))
}

// TestStackedConcurrent: under concurrency a stacked decision never admits
// more than either rate allows, and refusals are charged to neither.
func TestStackedConcurrent(t *testing.T) {
	q := newQuota(t, "items")
	rates := []throttle.Rate{
		{Name: "small", Limit: 7, Window: time.Hour},
		{Name: "large", Limit: 50, Window: time.Hour},
	}
	g := guard.Quota(q, rates)
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for range 8 {
		wg.Go(func() {
			for range 10 {
				if serveAs(g, "u").Code == http.StatusOK {
					mu.Lock()
					admitted++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 7, admitted, "admitted requests")
	ds, err := q.AllowAll(t.Context(), "u", rates, 0)
	require.NoError(t, err)
	assert.Equal(t, 0, ds[0].Remaining, "small")
	assert.Equal(t, 43, ds[1].Remaining, "large: charged only for the admitted")
}

// TestBadRate: a rate function's unusable rate answers 500, naming nothing.
func TestBadRate(t *testing.T) {
	g := guard.Quota(newQuota(t, "search"), func(*http.Request, string) throttle.Rate { return throttle.Rate{} })
	w := serveAs(g, "u")
	require.Equal(t, http.StatusInternalServerError, w.Code)
	assert.Contains(t, w.Body.String(), "misconfigured")
	assert.Empty(t, w.Header().Get("RateLimit"))
	assert.Panics(t, func() { guard.Quota(newQuota(t, "x"), []throttle.Rate{burst, burst}) }, "two rates of one name")
	assert.Panics(t, func() { guard.Quota(newQuota(t, "x"), []throttle.Rate{}) }, "no rate")
}

// TestHoldersFields: an Exclusive lock of two holders lists q=2 and, for an
// admitted request, the places left.
func TestHoldersFields(t *testing.T) {
	l, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "exports", Mode: throttle.Exclusive, Holders: 2})
	require.NoError(t, err)
	g := guard.Lock(l)
	release, inside := make(chan struct{}), make(chan struct{}, 2)
	var wg sync.WaitGroup
	fields := make([]string, 2)
	for i := range 2 {
		wg.Go(func() {
			w := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodPost, "/exports", nil)
			g.Serve(w, r, flow.Call{Route: "/exports", ID: "u"}, new(guard.Rejection), func(*http.Request, *guard.Capture) int {
				fields[i] = w.Header().Get("RateLimit")
				inside <- struct{}{}
				<-release
				return http.StatusOK
			})
		})
		<-inside
	}
	w := serveAs(g, "u")
	close(release)
	wg.Wait()
	assert.ElementsMatch(t, []string{`"exports";r=1`, `"exports";r=0`}, fields)
	require.Equal(t, http.StatusConflict, w.Code, "a third request while two run")
	assert.Equal(t, `"exports";q=2;qu="concurrent-requests"`, w.Header().Get("RateLimit-Policy"))
	assert.Regexp(t, `^"exports";r=0;t=\d+$`, w.Header().Get("RateLimit"))
	assert.Equal(t, http.StatusOK, serveAs(g, "u").Code, "after both finished")
}
