package examples_test

import (
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReportOverload: GET /api/report in each example answers one request
// 200; a burst far beyond its four slots gets 200s and, for the rest, 503
// with Retry-After and a problem body (shed, never queued without bound),
// each counted in GET /metrics' throttle_overload_shed_total, and the route
// serves again once the burst is over. Counts, not timings:
// how many are shed depends on the machine.
func TestReportOverload(t *testing.T) {
	skipUnlessProcesses(t)
	for _, name := range exampleNames {
		t.Run(name, func(t *testing.T) {
			a := startApp(t, name)
			get := func() (*http.Response, error) {
				res, err := http.Get(a.url + "/api/report")
				if err == nil {
					_ = res.Body.Close()
				}
				return res, err
			}
			res, err := get()
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, res.StatusCode)

			const burst = 300
			var mu sync.Mutex
			counts := map[int]int{}
			var wg sync.WaitGroup
			for range burst {
				wg.Go(func() {
					res, err := get()
					if !assert.NoError(t, err) {
						return
					}
					if res.StatusCode == http.StatusServiceUnavailable {
						s, err := strconv.Atoi(res.Header.Get("Retry-After"))
						assert.NoError(t, err, "a 503 without Retry-After")
						assert.Positive(t, s)
						assert.Equal(t, "application/problem+json", res.Header.Get("Content-Type"))
					}
					mu.Lock()
					counts[res.StatusCode]++
					mu.Unlock()
				})
			}
			wg.Wait()
			assert.Equal(t, burst, counts[200]+counts[503], "statuses other than 200 and 503: %v", counts)
			assert.Positive(t, counts[200], "nothing served under the burst: %v", counts)
			assert.Positive(t, counts[503], "a burst of %d on four slots of 50 ms shed nothing: %v", burst, counts)
			_, samples := scrape(t, http.DefaultClient, a)
			shed := 0.0
			for _, n := range reportSeries(samples, "throttle_overload_shed_total") {
				shed += n
			}
			assert.Equal(t, float64(counts[503]), shed, "throttle_overload_shed_total{policy=\"report\"} by reason: %v",
				reportSeries(samples, "throttle_overload_shed_total"))
			assert.Zero(t, reportSeries(samples, "throttle_overload_queued")[""], "queued after the burst")
			res, err = get()
			require.NoError(t, err)
			assert.Equal(t, http.StatusOK, res.StatusCode, "not served again after the burst")
		})
	}
}
