package guard

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle"
)

func TestSeconds(t *testing.T) {
	for d, want := range map[time.Duration]int64{
		0: 1, time.Millisecond: 1, time.Second: 1, time.Second + 1: 2, 2500 * time.Millisecond: 3,
	} {
		if got := seconds(d); got != want {
			t.Errorf("seconds(%v) = %d, want %d", d, got, want)
		}
	}
}

func TestWrite(t *testing.T) {
	submit := throttle.Policy{Name: "submit", Window: 5 * time.Second}
	search := throttle.Policy{Name: "search", Mode: throttle.Quota, Limit: 10, Burst: 10, Window: time.Minute}
	secret := errors.New("dial tcp 10.0.0.7:6379: key throttle:{submit:42} token abc")
	cases := []struct {
		name                     string
		rej                      Rejection
		retry, policy, rateLimit string
		problemType              string
	}{
		{"dedupe", Rejection{Status: 429, Reason: ReasonContended, RetryAfter: 2100 * time.Millisecond,
			Policy: &submit, Err: secret},
			"3", `"submit";q=1;w=5`, `"submit";r=0;t=3`, quotaExceeded},
		{"exclusive", Rejection{Status: 409, Reason: ReasonContended, RetryAfter: 20 * time.Second,
			Policy: &throttle.Policy{Name: "sync", Mode: throttle.Exclusive, LeaseTTL: 30 * time.Second}, Err: secret},
			"20", `"sync";q=1;qu="concurrent-requests"`, `"sync";r=0;t=20`, "about:blank"},
		{"no expiry", Rejection{Status: 429, Reason: ReasonContended, RetryAfter: -1, Policy: &submit},
			"5", `"submit";q=1;w=5`, `"submit";r=0;t=5`, quotaExceeded},
		{"contended, no time given", Rejection{Status: 429, Reason: ReasonContended, Policy: &submit},
			"1", `"submit";q=1;w=5`, `"submit";r=0;t=1`, quotaExceeded},
		{"quota", Rejection{Status: 429, Reason: ReasonContended, RetryAfter: 5200 * time.Millisecond,
			Policy:   &search,
			Decision: &throttle.Decision{RetryAfter: 5200 * time.Millisecond, ResetAfter: 59200 * time.Millisecond}},
			"6", `"search";q=10;w=60`, `"search";r=0;t=6`, quotaExceeded},
		{"quota, cost above what remains", Rejection{Status: 429, Reason: ReasonContended, RetryAfter: 10 * time.Second,
			Policy:   &search,
			Decision: &throttle.Decision{Remaining: 2, RetryAfter: 10 * time.Second, ResetAfter: 45 * time.Second}},
			"10", `"search";q=10;w=60`, `"search";r=2;t=3`, quotaExceeded},
		{"store down", Rejection{Status: 503, Reason: ReasonStoreUnavailable, RetryAfter: time.Second,
			Policy: &submit, Err: secret},
			"1", `"submit";q=1;w=5`, "", "about:blank"},
		{"bad key", Rejection{Status: 400, Reason: ReasonBadKey, Policy: &submit, Err: secret},
			"", `"submit";q=1;w=5`, "", badKeyType},
		{"cost above burst", Rejection{Status: 413, Reason: ReasonBadCost, Policy: &search},
			"", `"search";q=10;w=60`, "", "about:blank"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			Write(w, &c.rej)
			h := w.Result().Header
			if w.Code != c.rej.Status || h.Get("Retry-After") != c.retry ||
				h.Get("RateLimit-Policy") != c.policy || h.Get("RateLimit") != c.rateLimit ||
				h.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("status %d headers %v", w.Code, h)
			}
			var p struct {
				Type, Title, Detail string
				Status              int
			}
			if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
				t.Fatalf("body %q: %v", w.Body, err)
			}
			if p.Type != c.problemType || p.Status != c.rej.Status || p.Title != http.StatusText(c.rej.Status) || p.Detail == "" {
				t.Fatalf("problem %+v", p)
			}
			for _, leak := range []string{"10.0.0.7", "6379", "throttle:", "abc", "dial"} {
				if strings.Contains(w.Body.String(), leak) {
					t.Fatalf("body %q leaks %q", w.Body, leak)
				}
			}
		})
	}
}
