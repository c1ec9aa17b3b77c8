package guard_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/flow"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// clockedQuota returns a Quota named name on a memstore whose clock moves
// only by the function returned.
func clockedQuota(t *testing.T, name string) (*throttle.Quota, func(time.Duration)) {
	var mu sync.Mutex
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	q, err := throttle.NewQuota(memstore.New(memstore.WithClock(clock)), throttle.QuotaConfig{Name: name})
	require.NoError(t, err)
	return q, func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
}

// TestStrictFields: a client of a strict "10 per minute" guard sends a
// request every 700 ms for three minutes. Each minute admits exactly 10,
// and every answer's fields say what was admitted: RateLimit-Policy
// q=10;w=60; r, 10 less the requests admitted in the last minute; t, the
// seconds until the oldest of them leaves it, which a 429's Retry-After
// and the legacy fields repeat.
func TestStrictFields(t *testing.T) {
	q, advance := clockedQuota(t, "search")
	r := throttle.Rate{Limit: 10, Window: time.Minute, Strict: true}
	g := guard.Quota(q, r, guard.LegacyHeaders())
	var admitted []time.Duration
	perMinute := make([]int, 3)
	const tick = 700 * time.Millisecond
	for at := time.Duration(0); at < 3*time.Minute; at += tick {
		if at > 0 {
			advance(tick)
		}
		var in []time.Duration
		for _, a := range admitted {
			if a > at-r.Window {
				in = append(in, a)
			}
		}
		want := http.StatusOK
		if len(in) == r.Limit {
			want = http.StatusTooManyRequests
		} else {
			in = append(in, at)
			admitted = append(admitted, at)
			perMinute[at/time.Minute]++
		}
		secs := strconv.FormatInt(int64((in[0]+r.Window-at+time.Second-1)/time.Second), 10)
		w := serveAs(g, "u")
		h := w.Header()
		require.Equal(t, want, w.Code, "at %v", at)
		require.Equal(t, `"search";q=10;w=60`, h.Get("RateLimit-Policy"), "at %v", at)
		require.Equal(t, fmt.Sprintf(`"search";r=%d;t=%s`, r.Limit-len(in), secs), h.Get("RateLimit"), "at %v", at)
		require.Equal(t, strconv.Itoa(r.Limit-len(in)), h.Get("X-RateLimit-Remaining"), "at %v", at)
		require.Equal(t, secs, h.Get("X-RateLimit-Reset"), "at %v", at)
		if want == http.StatusTooManyRequests {
			require.Equal(t, secs, h.Get("Retry-After"), "at %v", at)
		}
	}
	require.Equal(t, []int{10, 10, 10}, perMinute, "admitted in each minute")
}

// TestStrictCountOnlyFailures: under a strict "3 per minute" that counts
// only failures, successes cost nothing, 20 concurrent failures get exactly
// 3 through, and a success's refund gives back the oldest admission in the
// window rather than its own (which concurrent requests make unknowable):
// no minute ever counts more than 3 failures, and room comes back a little
// later than had the success never been charged.
func TestStrictCountOnlyFailures(t *testing.T) {
	q, advance := clockedQuota(t, "login")
	g := guard.Quota(q, throttle.Rate{Limit: 3, Window: time.Minute, Strict: true}, guard.CountOnlyFailures())
	login := func(id string, status int) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/login", nil)
		var rej guard.Rejection
		if ok := g.Serve(w, r, flow.Call{Route: "/login", ID: id}, &rej, func(*http.Request, *guard.Capture) int {
			w.WriteHeader(status)
			return status
		}); !ok {
			rej.Write(w)
		}
		return w
	}
	var wg sync.WaitGroup
	var through sync.Map
	for i := range 20 {
		wg.Go(func() {
			if login("crowd", http.StatusUnauthorized).Code == http.StatusUnauthorized {
				through.Store(i, true)
			}
		})
	}
	wg.Wait()
	n := 0
	through.Range(func(any, any) bool { n++; return true })
	require.Equal(t, 3, n, "concurrent failures let through")

	for i := range 5 {
		require.Equal(t, http.StatusOK, login("u", http.StatusOK).Code, "success %d", i)
	}
	require.Equal(t, http.StatusUnauthorized, login("u", http.StatusUnauthorized).Code, "a failure at 0 s")
	advance(10 * time.Second)
	require.Equal(t, http.StatusOK, login("u", http.StatusOK).Code, "a success at 10 s, refunding the failure at 0 s")
	require.Equal(t, http.StatusUnauthorized, login("u", http.StatusUnauthorized).Code, "a failure at 10 s")
	advance(10 * time.Second)
	require.Equal(t, http.StatusUnauthorized, login("u", http.StatusUnauthorized).Code, "a failure at 20 s")
	w := login("u", http.StatusUnauthorized)
	require.Equal(t, http.StatusTooManyRequests, w.Code, "a fourth failure at 20 s")
	// The log holds 10 s (the success's charge, whose refund dropped the
	// failure at 0 s), 10 s and 20 s: the next fits at 70 s.
	require.Equal(t, "50", w.Header().Get("Retry-After"), "when the log's oldest, at 10 s, leaves the minute")
}
