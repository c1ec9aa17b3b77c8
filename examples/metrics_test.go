package examples_test

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// submitForm posts to /submit as user with a form body and a query (either
// may be empty), as a browser form or curl -d does.
func submitForm(c *http.Client, a *app, user, form, query string) reply {
	u := a.url + "/submit"
	if query != "" {
		u += "?" + query
	}
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form))
	if err != nil {
		return reply{app: a, err: err}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-User-ID", user)
	r := do(c, req)
	r.app = a
	return r
}

// checkRejectedSubmission requires the 422 of a submission the handler
// turned down on fail=1.
func checkRejectedSubmission(t *testing.T, what string, r reply) {
	t.Helper()
	name := r.app.name
	if r.err != nil || r.status != http.StatusUnprocessableEntity {
		t.Errorf("%s %s: got %d %v %s, want 422", name, what, r.status, r.err, r.body)
		return
	}
	var body struct{ Status, Reason, Server string }
	if err := json.Unmarshal([]byte(r.body), &body); err != nil || body.Status != "rejected" || body.Reason == "" || body.Server != name {
		t.Errorf("%s %s: body %q, want {\"status\":\"rejected\",\"reason\":...,\"server\":%q} (%v)", name, what, r.body, name, err)
	}
	if !strings.HasPrefix(r.contentType, "application/json") {
		t.Errorf("%s %s: Content-Type %q, want application/json", name, what, r.contentType)
	}
}

// TestSubmitFailure shows Dedupe's release on failure in each example: a
// submission with fail=1 (a form field, or a query parameter) gets 422 and
// frees the user's key, so the same user's next submission is accepted at
// once; its duplicate then gets 429 as ever.
func TestSubmitFailure(t *testing.T) {
	skipUnlessProcesses(t)
	t.Parallel()
	const win = time.Minute // nothing expires during the test
	c := newClient(t)
	for _, name := range exampleNames {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := startApp(t, name, "-window", win.String())
			for _, tc := range []struct{ user, form, query string }{
				{"fay", "order=1&fail=1", ""},
				{"gus", "", "fail=1"},
			} {
				checkRejectedSubmission(t, "submit with "+tc.form+tc.query, submitForm(c, a, tc.user, tc.form, tc.query))
				checkAccepted(t, a, "submit after a rejected one", submit(c, a, tc.user))
				checkDuplicate(t, name, tc.user, submit(c, a, tc.user), win)
			}
			// fail=0, or another field, is an ordinary submission.
			checkAccepted(t, a, "submit with fail=0", submitForm(c, a, "hal", "fail=0", ""))
			checkDuplicate(t, name, "hal", submitForm(c, a, "hal", "fail=0", ""), win)
			a.stop(t, syscall.SIGTERM)
		})
	}
}

// sample is one line of the Prometheus text format: a metric's name, its
// labels and its value.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

var (
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$`)
	labelPair  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
)

// scrape gets /metrics and returns the answer and its samples.
func scrape(t *testing.T, c *http.Client, a *app) (reply, []sample) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, a.url+"/metrics", nil)
	r := do(c, req)
	var samples []sample
	for _, line := range strings.Split(r.body, "\n") {
		m := sampleLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			continue
		}
		s := sample{name: m[1], labels: map[string]string{}, value: v}
		for _, p := range labelPair.FindAllStringSubmatch(m[2], -1) {
			s.labels[p[1]] = p[2]
		}
		samples = append(samples, s)
	}
	return r, samples
}

// requests returns the throttle_requests_total samples, by
// "policy/outcome", and their sum.
func requests(samples []sample) (map[string]float64, float64) {
	by, sum := map[string]float64{}, 0.0
	for _, s := range samples {
		if s.name == "throttle_requests_total" {
			by[s.labels["policy"]+"/"+s.labels["outcome"]] += s.value
			sum += s.value
		}
	}
	return by, sum
}

// TestMetrics checks GET /metrics in each example: after some traffic it
// answers 200 in the Prometheus text format, with throttle_requests_total
// counting /submit's admitted and rejected requests and the jobs policy,
// and the state of GET /api/report's overload limiter (checkReportMetrics);
// it is never throttled, and neither it nor /healthz is counted.
func TestMetrics(t *testing.T) {
	skipUnlessProcesses(t)
	t.Parallel()
	const work = 100 * time.Millisecond
	c := newClient(t)
	for _, name := range exampleNames {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := startApp(t, name, "-window", time.Minute.String(), "-work", work.String())
			checkAccepted(t, a, "first submit", submit(c, a, "ida"))
			checkDuplicate(t, name, "ida", submit(c, a, "ida"), time.Minute)
			checkJobDone(t, "m-1", runJob(context.Background(), c, a, "m-1"), work)
			checkSearchOK(t, "search", "gcra", search(c, a, "ida", "gcra"), searchLimit-1, searchLimit-1)
			req, _ := http.NewRequest(http.MethodGet, a.url+"/api/report", nil)
			if r := do(c, req); r.err != nil || r.status != http.StatusOK {
				t.Fatalf("%s GET /api/report: got %d %v, want 200", name, r.status, r.err)
			}

			r, samples := scrape(t, c, a)
			if r.err != nil || r.status != http.StatusOK {
				t.Fatalf("%s GET /metrics: got %d %v, want 200", name, r.status, r.err)
			}
			if !strings.HasPrefix(r.contentType, "text/plain") {
				t.Errorf("%s GET /metrics: Content-Type %q, want the text format (text/plain)", name, r.contentType)
			}
			by, before := requests(samples)
			for _, k := range []string{"submit/admitted", "submit/rejected", "jobs/admitted", "search/admitted"} {
				if by[k] < 1 {
					t.Errorf("%s GET /metrics: no throttle_requests_total{policy=%q,outcome=%q}; requests by policy/outcome: %v",
						name, strings.Split(k, "/")[0], strings.Split(k, "/")[1], by)
				}
			}
			for _, s := range samples {
				if s.name == "throttle_requests_total" && s.labels["policy"] == "jobs" && s.labels["mode"] != "exclusive" {
					t.Errorf("%s GET /metrics: jobs counted under mode %q, want exclusive", name, s.labels["mode"])
				}
			}
			checkReportMetrics(t, name, samples)

			// Many scrapes and health checks: all answered, none throttled
			// (no RateLimit fields) nor counted.
			for i := range 15 {
				req, _ := http.NewRequest(http.MethodGet, a.url+"/metrics", nil)
				if r := do(c, req); r.err != nil || r.status != http.StatusOK || r.policy != "" {
					t.Fatalf("%s GET /metrics #%d: got %d %v, RateLimit-Policy %q; want 200 and no throttling", name, i+2, r.status, r.err, r.policy)
				}
				healthz(t, c, a)
			}
			_, samples = scrape(t, c, a)
			if by, after := requests(samples); after != before {
				t.Errorf("%s: throttle_requests_total went from %v to %v over scrapes and health checks alone: %v", name, before, after, by)
			}
			a.stop(t, syscall.SIGTERM)
		})
	}
}

// reportSeries returns the samples of name for the "report" limiter, by
// their reason label ("" for a series without one).
func reportSeries(samples []sample, name string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range samples {
		if s.name == name && s.labels["policy"] == "report" {
			out[s.labels["reason"]] = s.value
		}
	}
	return out
}

// checkReportMetrics checks the series of GET /api/report's overload
// limiter after one request, served at once: a limit, nothing queued, no
// request shed or canceled (every reason listed), one admission counted
// and timed in the queueing delay histogram.
func checkReportMetrics(t *testing.T, name string, samples []sample) {
	t.Helper()
	one := func(metric string) float64 {
		v, ok := reportSeries(samples, metric)[""]
		if !ok {
			t.Errorf("%s GET /metrics: no %s{policy=\"report\"}", name, metric)
		}
		return v
	}
	if v := one("throttle_overload_limit"); v < 1 {
		t.Errorf("%s GET /metrics: throttle_overload_limit{policy=\"report\"} %v, want at least 1", name, v)
	}
	if v := one("throttle_overload_in_flight"); v < 0 || v > 1 { // its permit may end after the answer
		t.Errorf("%s GET /metrics: throttle_overload_in_flight{policy=\"report\"} %v, want 0 or 1", name, v)
	}
	for _, metric := range []string{"throttle_overload_queued", "throttle_overload_canceled_total", "throttle_overload_base_latency_seconds"} {
		if v := one(metric); v != 0 {
			t.Errorf("%s GET /metrics: %s{policy=\"report\"} %v, want 0 after one request", name, metric, v)
		}
	}
	want := map[string]float64{"limit": 0, "queue-timeout": 0, "queue-full": 0}
	if got := reportSeries(samples, "throttle_overload_shed_total"); !maps.Equal(got, want) {
		t.Errorf("%s GET /metrics: throttle_overload_shed_total{policy=\"report\"} by reason %v, want %v", name, got, want)
	}
	if v := one("throttle_overload_queue_duration_seconds_count"); v != 1 {
		t.Errorf("%s GET /metrics: throttle_overload_queue_duration_seconds_count{policy=\"report\"} %v, want 1", name, v)
	}
	if by, _ := requests(samples); by["report/admitted"] != 1 {
		t.Errorf("%s GET /metrics: throttle_requests_total{policy=\"report\",outcome=\"admitted\"} %v, want 1", name, by["report/admitted"])
	}
}
