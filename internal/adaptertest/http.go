package adaptertest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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
	require.Equal(t, want, rec.Code, "status (body %q)", rec.Body.String())
}

// Problem is a decoded RFC 9457 problem document.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	// ViolatedPolicies names the policies a quota-exceeded problem
	// exceeded (draft-ietf-httpapi-ratelimit-headers-11).
	ViolatedPolicies []string `json:"violated-policies"`
	// Retention is how long a Replay key's first response is kept, in
	// seconds, in the 409 and 422 answers of a Replay policy.
	Retention int `json:"retention-seconds"`
}

// CheckProblem checks that rec is a problem+json answer with status and
// problem type typ (with violated-policies when it is QuotaExceeded, and
// only then) whose body contains none of forbidden (keys, tokens,
// addresses, error texts), and returns it.
func CheckProblem(t testing.TB, rec *httptest.ResponseRecorder, status int, typ string, forbidden ...string) Problem {
	t.Helper()
	Status(t, rec, status)
	require.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"), "Content-Type")
	body := rec.Body.String()
	var p Problem
	require.NoError(t, json.Unmarshal([]byte(body), &p), "problem body %q", body)
	require.Equal(t, typ, p.Type, "problem type of %q", body)
	require.Equal(t, status, p.Status, "problem status of %q", body)
	require.Equal(t, http.StatusText(status), p.Title, "problem title of %q", body)
	require.NotEmpty(t, p.Detail, "problem detail of %q", body)
	// quota-exceeded names the policies exceeded; no other type has the
	// member.
	require.Equal(t, typ == QuotaExceeded, len(p.ViolatedPolicies) > 0,
		"problem %q: violated-policies %q with type %q", body, p.ViolatedPolicies, typ)
	// The type URI may name the library's documentation; nothing else
	// may name its internals.
	scan := strings.Replace(body, strconv.Quote(p.Type), `""`, 1)
	for _, f := range append(forbidden, ClientAddr, "throttle", "keyfuncs") {
		if f != "" {
			require.NotContains(t, scan, f, "problem body %q", body)
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
	require.NoError(t, err, "Retry-After %q, want an integer >= 1", v)
	require.GreaterOrEqual(t, n, 1, "Retry-After")
	return n
}

// OK is the success answer of the suite's handlers.
func OK(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, `{"ok":true}`+"\n")
}

// QuotaExceeded is the problem type of 429 answers.
const QuotaExceeded = "https://iana.org/assignments/http-problem-types#quota-exceeded"

// Panics fails the test unless f panics with a message that contains want:
// how an adapter turns away a wiring mistake (a nil Guard, key function or
// handler) at start-up.
func Panics(t testing.TB, want string, f func()) {
	t.Helper()
	p := func() (p any) {
		defer func() { p = recover() }()
		f()
		return nil
	}()
	msg, _ := p.(string)
	require.Contains(t, msg, want, "panicked with %v", p)
}
