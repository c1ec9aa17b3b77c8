package examples_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-throttle/throttle/internal/redistest"
)

// The quota of GET /search (DESIGN section 6): 10 requests per minute per
// user, all 10 at once, refilled one every 6 s (GCRA).
const (
	searchLimit    = 10
	searchWindow   = time.Minute
	searchInterval = searchWindow / searchLimit
	searchPolicy   = `"search";q=10;w=60`
)

// search gets /search?q=query as user (no X-User-ID header when user is "").
func search(c *http.Client, a *app, user, query string) reply {
	req, err := http.NewRequest(http.MethodGet, a.url+"/search?q="+url.QueryEscape(query), nil)
	if err != nil {
		return reply{app: a, err: err}
	}
	if user != "" {
		req.Header.Set("X-User-ID", user)
	}
	r := do(c, req)
	r.app = a
	return r
}

// rateLimitField matches the RateLimit field of the search policy.
var rateLimitField = regexp.MustCompile(`^"search";r=(\d+)(?:;t=(\d+))?$`)

// parseRateLimit returns r and t of a RateLimit field of the search policy
// (t is -1 when absent).
func parseRateLimit(field string) (r, t int, ok bool) {
	m := rateLimitField.FindStringSubmatch(field)
	if m == nil {
		return 0, 0, false
	}
	r, _ = strconv.Atoi(m[1])
	t = -1
	if m[2] != "" {
		t, _ = strconv.Atoi(m[2])
	}
	return r, t, true
}

// checkSearchOK requires an admitted search: 200, the JSON body with the
// query echoed back, and the RateLimit fields of the search policy with r
// within [lo, hi] and t within a refill interval.
func checkSearchOK(t *testing.T, what, query string, r reply, lo, hi int) {
	t.Helper()
	name := r.app.name
	if r.err != nil || r.status != http.StatusOK {
		t.Errorf("%s %s: got %d %v %s, want 200", name, what, r.status, r.err, r.body)
		return
	}
	if r.contentType != "application/json" {
		t.Errorf("%s %s: Content-Type %q, want application/json", name, what, r.contentType)
	}
	var body struct {
		Query   *string
		Results []struct{ Title, URL string }
	}
	if err := json.Unmarshal([]byte(r.body), &body); err != nil || body.Query == nil || body.Results == nil {
		t.Errorf("%s %s: body %q is not the search JSON (%v)", name, what, r.body, err)
	} else if utf8.ValidString(query) && *body.Query != query {
		t.Errorf("%s %s: body says query %q, want %q", name, what, *body.Query, query)
	} else if !utf8.ValidString(query) && !strings.Contains(*body.Query, "\uFFFD") {
		t.Errorf("%s %s: body says query %q, want U+FFFD for the invalid bytes of %q", name, what, *body.Query, query)
	}
	if r.policy != searchPolicy {
		t.Errorf("%s %s: RateLimit-Policy %q, want %q", name, what, r.policy, searchPolicy)
	}
	rem, secs, ok := parseRateLimit(r.rateLimit)
	if !ok || rem < lo || rem > hi {
		t.Errorf("%s %s: RateLimit %q, want r within %d..%d", name, what, r.rateLimit, lo, hi)
	}
	// t is the time until one more request refills: at most an interval
	// (absent only when the quota is full, which it is not after a charge).
	if ok && (secs < 1 || secs > int(searchInterval/time.Second)) {
		t.Errorf("%s %s: RateLimit %q, want t within 1..%d", name, what, r.rateLimit, int(searchInterval/time.Second))
	}
}

// checkSearchRefused requires the 429 of an exhausted quota: Retry-After
// within [lo, 6] seconds, RateLimit r=0, and the quota-exceeded problem.
func checkSearchRefused(t *testing.T, what string, r reply, lo int) {
	t.Helper()
	name := r.app.name
	if r.err != nil || r.status != http.StatusTooManyRequests {
		t.Errorf("%s %s: got %d %v %s, want 429", name, what, r.status, r.err, r.body)
		return
	}
	hi := int(searchInterval / time.Second)
	if secs, err := strconv.Atoi(r.retryAfter); err != nil || secs < lo || secs > hi {
		t.Errorf("%s %s: Retry-After %q, want %d..%d", name, what, r.retryAfter, lo, hi)
	}
	if r.policy != searchPolicy {
		t.Errorf("%s %s: RateLimit-Policy %q, want %q", name, what, r.policy, searchPolicy)
	}
	if rem, _, ok := parseRateLimit(r.rateLimit); !ok || rem != 0 {
		t.Errorf("%s %s: RateLimit %q, want r=0", name, what, r.rateLimit)
	}
	if !strings.HasPrefix(r.contentType, "application/problem+json") {
		t.Errorf("%s %s: Content-Type %q, want application/problem+json", name, what, r.contentType)
	}
	var problem struct {
		Type             string
		Status           int
		ViolatedPolicies []string `json:"violated-policies"`
	}
	const quotaExceeded = "https://iana.org/assignments/http-problem-types#quota-exceeded"
	if err := json.Unmarshal([]byte(r.body), &problem); err != nil || problem.Type != quotaExceeded ||
		problem.Status != http.StatusTooManyRequests || fmt.Sprint(problem.ViolatedPolicies) != "[search]" {
		t.Errorf("%s %s: body %q is not the quota-exceeded problem (%v)", name, what, r.body, err)
	}
}

// checkSearchRun checks one user's searches, sent one after another (rs in
// the order sent, queries the q of each), against the quota.
//
// GCRA with a burst of 10 and an interval T of 6 s leaves, after the i-th
// admitted request, 10 - i + floor(d/T) requests, where d is how long after
// the first one the store decided it; d is at most the time from sending the
// first request to the answer to this one (elapsed), so r lies within
// [10-i, 10-i+floor(elapsed/T)], exactly 10-i when elapsed < T. The first 10
// are admitted at any speed. A later request is refused as long as no
// request has refilled (elapsed < T), with a Retry-After of T - d rounded
// up: at most 6, and at least 5 - floor(elapsed) (a second of slack for the
// rounding and the clocks). A machine so slow that the run outlasts T may
// admit more; then only the bounds are checked.
func checkSearchRun(t *testing.T, user string, rs []reply, queries []string) {
	t.Helper()
	start := rs[0].start
	admitted := 0
	for k, r := range rs {
		elapsed := r.end.Sub(start)
		refills := int(elapsed / searchInterval)
		what := fmt.Sprintf("search %d for %q", k+1, user)
		switch {
		case admitted < searchLimit || (refills > 0 && r.err == nil && r.status == http.StatusOK):
			admitted++
			lo := max(searchLimit-admitted, 0)
			checkSearchOK(t, what, queries[k], r, lo, min(lo+refills, searchLimit-1))
		case refills > 0 && r.err == nil && r.status == http.StatusTooManyRequests:
			checkSearchRefused(t, what, r, 1)
		default:
			checkSearchRefused(t, what, r, max(5-int(elapsed/time.Second), 1))
		}
		if refills > 0 && k == len(rs)-1 {
			t.Logf("user %q: the searches took %v, more than the refill interval %v (busy machine); refills allowed for",
				user, elapsed, searchInterval)
		}
	}
}

// searchQueries are the q parameters of a run (ten, then one per
// example): an empty one, quotes and backslashes, HTML, non-ASCII, query
// syntax, and invalid UTF-8 (which the body must still carry as valid
// JSON).
var searchQueries = []string{
	"gcra", "", `say "hi" \ ok`, "</script><b>&amp;", "été 検索 🚀", "a&b=c;d+e%f", "\xff\xfe bad",
	"rate", "Idempotent", "\"", "tail", "last", "after", "fourth",
}

// TestSearchMemory runs each example on its in-memory store (with a -window
// the quota must ignore) and spends one user's quota of GET /search: ten
// 200s counting RateLimit r down 9..0, then 429. Another user, and a client
// without X-User-ID (keyed by its IP), still have theirs; POST /search is
// 405 and costs nothing; the four answer a search with the same bytes.
func TestSearchMemory(t *testing.T) {
	skipUnlessProcesses(t)
	c := newClient(t)
	bodies := map[string]string{}
	for _, name := range exampleNames {
		t.Run(name, func(t *testing.T) {
			a := startApp(t, name, "-window", "1s")
			req, _ := http.NewRequest(http.MethodPost, a.url+"/search", strings.NewReader(`{"q":"x"}`))
			req.Header.Set("X-User-ID", "ann")
			if r := do(c, req); r.err != nil || r.status != http.StatusMethodNotAllowed {
				t.Errorf("%s POST /search = %d %v, want 405", name, r.status, r.err)
			}

			var rs []reply
			for k := range searchLimit + 1 {
				rs = append(rs, search(c, a, "ann", searchQueries[k]))
			}
			checkSearchRun(t, "ann", rs, searchQueries) // the POST was not charged: r starts at 9
			checkSearchOK(t, "another user's search", "gcra", search(c, a, "bob", "gcra"), searchLimit-1, searchLimit-1)
			checkSearchOK(t, "search without X-User-ID", "gcra", search(c, a, "", "gcra"), searchLimit-1, searchLimit-1)
			bodies[name] = rs[0].body
			healthz(t, c, a)
			a.stop(t, syscall.SIGTERM)
		})
	}
	if bodies["gin"] != bodies["nethttp"] || bodies["echo"] != bodies["nethttp"] || bodies["fiber"] != bodies["nethttp"] {
		t.Errorf("the examples answer the same search differently:\n%q\n%q\n%q\n%q", bodies["nethttp"], bodies["gin"], bodies["echo"], bodies["fiber"])
	}
}

// TestSearchSharedRedis runs the four examples on one redis-server and
// spreads one user's searches round-robin over them: together they admit
// exactly 10, whichever process answers, and then every process refuses,
// which shows they build the same quota key.
func TestSearchSharedRedis(t *testing.T) {
	skipUnlessProcesses(t)
	srv := redistest.Start(t)
	args := []string{"-redis", srv.Addr, "-window", "1s"}
	apps := []*app{startApp(t, "nethttp", args...), startApp(t, "gin", args...), startApp(t, "echo", args...),
		startApp(t, "fiber", args...)}
	c := newClient(t)

	// 10 round-robin, then one more to each process.
	var rs []reply
	for k := range searchLimit + len(apps) {
		rs = append(rs, search(c, apps[k%len(apps)], "zoe", searchQueries[k]))
	}
	checkSearchRun(t, "zoe", rs, searchQueries)
	// Another user's quota is untouched, in another process.
	checkSearchOK(t, "another user's search", "gcra", search(c, apps[2], "yann", "gcra"), searchLimit-1, searchLimit-1)
}
