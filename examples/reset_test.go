package examples_test

import (
	"net/http"
	"strconv"
	"testing"
)

// TestPasswordReset checks POST /password-reset, the examples' Cooldown
// route: 202, then 429 for the rest of the minute with Retry-After and the
// RateLimit fields, while another user is not affected.
func TestPasswordReset(t *testing.T) {
	skipUnlessProcesses(t)
	for _, name := range exampleNames {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := startApp(t, name)
			c := newClient(t)
			post := func(user string) reply {
				req, _ := http.NewRequest(http.MethodPost, a.url+"/password-reset", nil)
				req.Header.Set("X-User-ID", user)
				return do(c, req)
			}
			first := post("alice")
			if first.err != nil || first.status != http.StatusAccepted || first.contentType != "application/json" ||
				first.policy != `"reset";q=1;w=60` || first.rateLimit != `"reset";r=0;t=60` {
				t.Fatalf("first: %d %v %q, RateLimit-Policy %q, RateLimit %q", first.status, first.err, first.body,
					first.policy, first.rateLimit)
			}
			again := post("alice")
			checkProblem(t, "second reset within the minute", again, http.StatusTooManyRequests)
			if n, err := strconv.Atoi(again.retryAfter); err != nil || n < 1 || n > 60 {
				t.Fatalf("Retry-After %q, want 1..60", again.retryAfter)
			}
			if other := post("bob"); other.status != http.StatusAccepted {
				t.Fatalf("another user: %d", other.status)
			}
		})
	}
}
