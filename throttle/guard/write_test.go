package guard

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
)

func TestSeconds(t *testing.T) {
	for d, want := range map[time.Duration]int64{
		0: 1, time.Millisecond: 1, time.Second: 1, time.Second + 1: 2, 2500 * time.Millisecond: 3,
	} {
		assert.Equal(t, want, seconds(d), "seconds(%v)", d)
	}
}

func TestWrite(t *testing.T) {
	st := memstore.New()
	lock := func(c throttle.LockConfig) *Guard {
		l, err := throttle.NewLock(st, c)
		require.NoError(t, err)
		return Lock(l)
	}
	submit := lock(throttle.LockConfig{Name: "submit", TTL: 5 * time.Second})
	exclusive := lock(throttle.LockConfig{Name: "sync", Mode: throttle.Exclusive, TTL: 30 * time.Second})
	q, err := throttle.NewQuota(st, throttle.QuotaConfig{Name: "search"})
	require.NoError(t, err)
	search := Quota(q, throttle.Rate{Limit: 10, Burst: 10, Window: time.Minute})
	secret := errors.New("dial tcp 10.0.0.7:6379: key throttle:{submit:42} token abc")
	cases := []struct {
		name                     string
		rej                      Rejection
		retry, policy, rateLimit string
		problemType              string
	}{
		{"dedupe", Rejection{Status: 429, Reason: ReasonContended, RetryAfter: 2100 * time.Millisecond,
			Policy: "submit", g: submit, Err: secret},
			"3", `"submit";q=1;w=5`, `"submit";r=0;t=3`, quotaExceeded},
		{"exclusive", Rejection{Status: 409, Reason: ReasonContended, RetryAfter: 20 * time.Second,
			Policy: "sync", g: exclusive, Err: secret},
			"20", `"sync";q=1;qu="concurrent-requests"`, `"sync";r=0;t=20`, "about:blank"},
		{"no expiry", Rejection{Status: 429, Reason: ReasonContended, RetryAfter: -1, Policy: "submit", g: submit},
			"5", `"submit";q=1;w=5`, `"submit";r=0;t=5`, quotaExceeded},
		{"contended, no time given", Rejection{Status: 429, Reason: ReasonContended, Policy: "submit", g: submit},
			"1", `"submit";q=1;w=5`, `"submit";r=0;t=1`, quotaExceeded},
		{"quota", Rejection{Status: 429, Reason: ReasonContended, RetryAfter: 5200 * time.Millisecond,
			Policy:   "search",
			g:        search,
			Decision: &store.Decision{RetryAfter: 5200 * time.Millisecond, ResetAfter: 59200 * time.Millisecond}},
			"6", `"search";q=10;w=60`, `"search";r=0;t=6`, quotaExceeded},
		{"quota, cost above what remains", Rejection{Status: 429, Reason: ReasonContended, RetryAfter: 10 * time.Second,
			Policy:   "search",
			g:        search,
			Decision: &store.Decision{Remaining: 2, RetryAfter: 10 * time.Second, ResetAfter: 45 * time.Second}},
			"10", `"search";q=10;w=60`, `"search";r=2;t=3`, quotaExceeded},
		{"store down", Rejection{Status: 503, Reason: ReasonStoreUnavailable, RetryAfter: time.Second,
			Policy: "submit", g: submit, Err: secret},
			"1", `"submit";q=1;w=5`, "", "about:blank"},
		{"bad key", Rejection{Status: 400, Reason: ReasonBadKey, Policy: "submit", g: submit, Err: secret},
			"", `"submit";q=1;w=5`, "", reasonDoc + "ReasonBadKey"},
		{"cost above burst", Rejection{Status: 413, Reason: ReasonBadCost, Policy: "search", g: search},
			"", `"search";q=10;w=60`, "", "about:blank"},
		// Made elsewhere than in a Guard: no policy is known, whatever
		// the name says, so no RateLimit field.
		{"no guard", Rejection{Status: 429, Reason: ReasonContended, RetryAfter: 2100 * time.Millisecond,
			Policy: "submit", Err: secret},
			"3", "", "", quotaExceeded},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			c.rej.Write(w)
			h := w.Result().Header
			assert.Equal(t, c.rej.Status, w.Code, "status")
			assert.Equal(t, c.retry, h.Get("Retry-After"), "Retry-After")
			assert.Equal(t, c.policy, h.Get("RateLimit-Policy"), "RateLimit-Policy")
			assert.Equal(t, c.rateLimit, h.Get("RateLimit"), "RateLimit")
			assert.Equal(t, "application/problem+json", h.Get("Content-Type"), "Content-Type")
			var p struct {
				Type, Title, Detail string
				Status              int
			}
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &p), "body %q", w.Body)
			assert.Equal(t, c.problemType, p.Type, "problem type")
			assert.Equal(t, c.rej.Status, p.Status, "problem status")
			assert.Equal(t, http.StatusText(c.rej.Status), p.Title, "problem title")
			assert.NotEmpty(t, p.Detail, "problem detail")
			for _, leak := range []string{"10.0.0.7", "6379", "throttle:", "abc", "dial"} {
				assert.NotContains(t, w.Body.String(), leak, "the body leaks")
			}
		})
	}
}
