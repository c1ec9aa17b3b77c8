package adaptertest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// ClientAddr is the peer address httptest gives requests; it must never
// appear in a rejection body.
const ClientAddr = "192.0.2.1"

// Submit returns a POST /submit request from user (no user header when
// user is empty).
func Submit(user string) *http.Request {
	return SubmitBody(user, "")
}

// SubmitBody is Submit with a body.
func SubmitBody(user, body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/submit", strings.NewReader(body))
	if user != "" {
		r.Header.Set(UserHeader, user)
	}
	return r
}

// Serve runs r through h and returns the recorded response.
func Serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

// ServePanic runs r through h and returns the value h panicked with, or nil.
func ServePanic(h http.Handler, r *http.Request) (p any) {
	defer func() { p = recover() }()
	h.ServeHTTP(httptest.NewRecorder(), r)
	return nil
}

// Status fails the test when rec's status is not want.
func Status(t testing.TB, rec *httptest.ResponseRecorder, want int) {
	t.Helper()
	if rec.Code != want {
		t.Fatalf("status %d, want %d (body %q)", rec.Code, want, rec.Body.String())
	}
}

// Problem is a decoded RFC 9457 problem document.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
}

// CheckProblem checks that rec is a problem+json answer with status and
// problem type typ whose body contains none of forbidden (keys, tokens,
// addresses, error texts), and returns it.
func CheckProblem(t testing.TB, rec *httptest.ResponseRecorder, status int, typ string, forbidden ...string) Problem {
	t.Helper()
	Status(t, rec, status)
	if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q, want application/problem+json", ct)
	}
	body := rec.Body.String()
	var p Problem
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatalf("problem body %q: %v", body, err)
	}
	if p.Type != typ || p.Status != status || p.Title != http.StatusText(status) || p.Detail == "" {
		t.Fatalf("problem %+v, want type %q, status %d, title %q and a detail", p, typ, status, http.StatusText(status))
	}
	for _, f := range append(forbidden, ClientAddr, "throttle", "keyfuncs") {
		if f != "" && strings.Contains(body, f) {
			t.Fatalf("problem body %q contains %q", body, f)
		}
	}
	return p
}

// RetryAfter returns the Retry-After header as whole seconds, failing the
// test unless it is an integer of at least 1.
func RetryAfter(t testing.TB, h http.Header) int {
	t.Helper()
	v := h.Get("Retry-After")
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("Retry-After %q, want an integer >= 1", v)
	}
	return n
}

var rateLimitRE = regexp.MustCompile(`^"([^"]+)";r=0;t=([0-9]+)$`)

// CheckRateLimit checks the RateLimit-Policy and RateLimit headers of a
// contended rejection: policy is the whole RateLimit-Policy value, and
// RateLimit must name the same policy with r=0 and 1 <= t <= maxT.
func CheckRateLimit(t testing.TB, h http.Header, name, policy string, maxT int) {
	t.Helper()
	if got := h.Get("RateLimit-Policy"); got != policy {
		t.Fatalf("RateLimit-Policy %q, want %q", got, policy)
	}
	m := rateLimitRE.FindStringSubmatch(h.Get("RateLimit"))
	if m == nil || m[1] != name {
		t.Fatalf("RateLimit %q, want \"%s\";r=0;t=N", h.Get("RateLimit"), name)
	}
	if n, _ := strconv.Atoi(m[2]); n < 1 || n > maxT {
		t.Fatalf("RateLimit t=%d, want 1..%d", n, maxT)
	}
}

// OK is the success answer of the suite's handlers.
func OK(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, `{"ok":true}`+"\n")
}

// QuotaExceeded is the problem type of 429 answers.
const QuotaExceeded = "https://iana.org/assignments/http-problem-types#quota-exceeded"
