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

	"github.com/go-throttle/throttle/throttle"
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
	obs := promthrottle.New(promthrottle.WithMemstore(memstore.New()))
	observeAll(obs, "lint")
	problems, err := testutil.CollectAndLint(obs)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	if n := testutil.CollectAndCount(obs); n < 6 {
		t.Fatalf("%d series collected, want one of each family at least", n)
	}
}

// TestTraffic sends real requests through the nethttp middleware of four
// policies over one memstore, scrapes a promhttp handler over HTTP, and
// checks every series the traffic made, and only those.
func TestTraffic(t *testing.T) {
	mem := memstore.New()
	obs := promthrottle.New(promthrottle.WithMemstore(mem))
	reg := newRegistry(t, obs)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	for _, p := range []throttle.Policy{
		{Name: "submit", Window: time.Minute},
		{Name: "search", Mode: throttle.Quota, Limit: 2, Window: time.Hour},
		{Name: "export", Mode: throttle.Exclusive},
		{Name: "beta", Window: time.Minute, DryRun: true},
	} {
		mux.Handle("/"+p.Name, guarded(newLimiter(t, mem, obs, p), app))
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
		must(t, err, "request")
		if id != "" {
			r.Header.Set(userHeader, id)
		}
		resp, err := client.Do(r)
		if want == 0 {
			if err == nil {
				resp.Body.Close()
				t.Fatalf("POST %s: status %d, want the connection dropped", path, resp.StatusCode)
			}
			return
		}
		must(t, err, "POST %s", path)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("POST %s as %q: status %d, want %d", path, id, resp.StatusCode, want)
		}
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
	if strings.Contains(body, userTag) {
		t.Fatalf("the scrape contains the user id %q:\n%s", userTag, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	parsed, err := parser.TextToMetricFamilies(strings.NewReader(body))
	must(t, err, "parse the scrape")
	fs := families(parsed)
	for _, mf := range fs {
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if strings.Contains(lp.GetValue(), userTag) {
					t.Fatalf("%s has label %s=%q", mf.GetName(), lp.GetName(), lp.GetValue())
				}
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
		if mf := fs[name]; mf == nil || mf.GetType() != typ {
			t.Fatalf("%s: family %v, want type %v", name, mf, typ)
		}
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
	if n := len(h.GetBucket()); n != 15 {
		t.Errorf("store duration has %d buckets, want 15 (50µs … 1s, +Inf)", n)
	}
	if b := h.GetBucket()[0].GetUpperBound(); b != 0.00005 {
		t.Errorf("first store bucket %v, want 50µs", b)
	}
	if s := h.GetSampleSum(); s <= 0 || s > 10 {
		t.Errorf("search's quota calls took %vs in all", s)
	}
	if n := len(histogram(t, fs, "throttle_hold_duration_seconds", hold("export", "exclusive", "done")).GetBucket()); n != 18 {
		t.Errorf("hold duration has %d buckets, want 18 (1ms … 5min, +Inf)", n)
	}

	problems, err := testutil.GatherAndLint(reg)
	must(t, err, "lint")
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// scrapeText gets url as a Prometheus server would and returns the body.
func scrapeText(t testing.TB, client *http.Client, url string) string {
	t.Helper()
	r, err := http.NewRequest(http.MethodGet, url, nil)
	must(t, err, "request")
	r.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := client.Do(r)
	must(t, err, "scrape")
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err, "read the scrape")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("scrape: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
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
	t.Fatalf("no series %s{%s}", name, labels)
	return nil
}
