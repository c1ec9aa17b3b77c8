package promthrottle_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/promthrottle"
)

// The identities of the test's users. No scrape may contain userTag.
const (
	userTag   = "u4242"
	user      = "u4242-alice"
	otherUser = "u4242-bob"
)

// app answers with the status in the "status" query parameter (201 by
// default), or aborts the request with a panic when "panic" is set.
var app = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Has("panic") {
		panic(http.ErrAbortHandler) // net/http drops the connection and logs nothing
	}
	status := http.StatusCreated
	if s := r.URL.Query().Get("status"); s != "" {
		status, _ = strconv.Atoi(s)
	}
	w.WriteHeader(status)
})

// TestLint lints the metrics after one event of every kind, so that every
// family and every label is present.
func TestLint(t *testing.T) {
	obs := promthrottle.New(memstore.New()).Overload(newOverload(t, "lint"))
	observeAll(obs, "lint")
	problems, err := testutil.CollectAndLint(obs)
	require.NoError(t, err)
	assert.Empty(t, problems, "lint")
	require.GreaterOrEqual(t, testutil.CollectAndCount(obs), 6, "series collected: want one of each family at least")
}

// TestTraffic sends real requests through the nethttp middleware of four
// limiters over one memstore, scrapes a promhttp handler over HTTP, and
// checks every series the traffic made, and only those.
func TestTraffic(t *testing.T) {
	mem := memstore.New()
	obs := promthrottle.New(mem)
	reg := newRegistry(t, obs)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	search := newQuota(t, mem, obs, throttle.QuotaConfig{Name: "search"})
	for name, g := range map[string]*guard.Guard{
		"submit": guard.Lock(newLock(t, mem, obs, throttle.LockConfig{Name: "submit", TTL: time.Minute})),
		"search": guard.Quota(search, throttle.Rate{Limit: 2, Window: time.Hour}),
		"export": guard.Lock(newLock(t, mem, obs, throttle.LockConfig{Name: "export", Mode: throttle.Exclusive})),
		"beta": guard.Lock(newLock(t, mem, obs, throttle.LockConfig{Name: "beta", TTL: time.Minute,
			Options: throttle.Options{DryRun: true}})),
	} {
		mux.Handle("/"+name, guarded(g, app))
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	client := srv.Client()

	// send POSTs (never retried by the client, unlike a GET whose
	// connection broke) to path as id, and checks the status, or that
	// the connection was dropped when want is 0.
	send := func(path, id string, want int) {
		t.Helper()
		r, err := http.NewRequest(http.MethodPost, srv.URL+path, nil)
		require.NoError(t, err, "request")
		if id != "" {
			r.Header.Set(userHeader, id)
		}
		resp, err := client.Do(r)
		if want == 0 {
			if err == nil {
				resp.Body.Close()
				require.Failf(t, "the connection was not dropped", "POST %s: status %d", path, resp.StatusCode)
			}
			return
		}
		require.NoError(t, err, "POST %s", path)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, want, resp.StatusCode, "POST %s as %q: status", path, id)
	}
	send("/submit", user, http.StatusCreated)
	send("/submit", user, http.StatusTooManyRequests) // a duplicate
	send("/submit", "", http.StatusBadRequest)        // no key
	send("/submit?status=500", otherUser, 500)        // failed: the key is released
	send("/search", user, http.StatusCreated)         // quota 2 per hour
	send("/search", user, http.StatusCreated)         //
	send("/search", user, http.StatusTooManyRequests) // spent
	send("/export?status=200", user, http.StatusOK)   // released when done
	send("/export?panic=1", user, 0)                  // released on the panic
	send("/beta", user, http.StatusCreated)           // dry run
	send("/beta", user, http.StatusCreated)           // would be rejected

	body := scrapeText(t, client, srv.URL+"/metrics")
	require.NotContains(t, body, userTag, "the scrape contains the user id")
	parser := expfmt.NewTextParser(model.UTF8Validation)
	parsed, err := parser.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err, "parse the scrape")
	fs := families(parsed)
	for _, mf := range fs {
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				require.NotContains(t, lp.GetValue(), userTag, "%s has label %s", mf.GetName(), lp.GetName())
			}
		}
	}

	types := map[string]dto.MetricType{
		"throttle_requests_total":         dto.MetricType_COUNTER,
		"throttle_store_duration_seconds": dto.MetricType_HISTOGRAM,
		"throttle_hold_duration_seconds":  dto.MetricType_HISTOGRAM,
		"throttle_memstore_keys":          dto.MetricType_GAUGE,
	}
	for name, typ := range types {
		require.NotNil(t, fs[name], "%s: no family", name)
		require.Equal(t, typ, fs[name].GetType(), "%s: type", name)
	}
	checkSeries(t, fs, "throttle_requests_total", map[string]float64{
		req("submit", "dedupe", "admitted"):       2,
		req("submit", "dedupe", "rejected"):       1,
		req("submit", "dedupe", "key_error"):      1,
		req("search", "quota", "admitted"):        2,
		req("search", "quota", "rejected"):        1,
		req("export", "exclusive", "admitted"):    2,
		req("beta", "dedupe", "admitted"):         1,
		req("beta", "dedupe", "dry_run_rejected"): 1,
	})
	checkSeries(t, fs, "throttle_store_duration_seconds", map[string]float64{
		op("submit", "acquire"): 3, // not the request without a key
		op("submit", "release"): 1, // the failed request's
		op("search", "quota"):   3,
		op("export", "acquire"): 2,
		op("export", "release"): 2,
		op("beta", "acquire"):   2,
	})
	checkSeries(t, fs, "throttle_hold_duration_seconds", map[string]float64{
		hold("submit", "dedupe", "failed"):   1,
		hold("export", "exclusive", "done"):  1,
		hold("export", "exclusive", "panic"): 1,
	})
	checkSeries(t, fs, "throttle_store_errors_total", nil)
	checkSeries(t, fs, "throttle_lease_events_total", nil)
	// Held now: submit's and beta's Dedupe keys of user, and search's
	// quota of user. The failed and the Exclusive requests gave theirs
	// back.
	checkSeries(t, fs, "throttle_memstore_keys", map[string]float64{"": 3})

	// The histograms have the default buckets, and their sums are hold
	// and call times, in seconds.
	h := histogram(t, fs, "throttle_store_duration_seconds", op("search", "quota"))
	require.Len(t, h.GetBucket(), 15, "store duration buckets: want 15 (50µs … 1s, +Inf)")
	assert.Equal(t, 0.00005, h.GetBucket()[0].GetUpperBound(), "first store bucket: want 50µs")
	assert.Positive(t, h.GetSampleSum(), "search's quota calls' time in all")
	assert.LessOrEqual(t, h.GetSampleSum(), 10.0, "search's quota calls' time in all")
	assert.Len(t, histogram(t, fs, "throttle_hold_duration_seconds", hold("export", "exclusive", "done")).GetBucket(), 18,
		"hold duration buckets: want 18 (1ms … 5min, +Inf)")

	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err, "lint")
	assert.Empty(t, problems, "lint")
}

// scrapeText gets url as a Prometheus server would and returns the body.
func scrapeText(t testing.TB, client *http.Client, url string) string {
	t.Helper()
	r, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err, "request")
	r.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := client.Do(r)
	require.NoError(t, err, "scrape")
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err, "read the scrape")
	require.Equal(t, http.StatusOK, resp.StatusCode, "scrape")
	require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain"), "scrape: Content-Type %q", resp.Header.Get("Content-Type"))
	return string(b)
}

// histogram returns the histogram series of name with labels.
func histogram(t testing.TB, fs families, name, labels string) *dto.Histogram {
	t.Helper()
	for _, m := range fs[name].GetMetric() {
		if labelString(m) == labels {
			return m.GetHistogram()
		}
	}
	require.Failf(t, "no series", "%s{%s}", name, labels)
	return nil
}
