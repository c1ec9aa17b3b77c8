package guard

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/flow"
	"github.com/go-throttle/throttle/throttle/memstore"
)

func TestWrite(t *testing.T) {
	clock := time.Now()
	st := memstore.New(memstore.WithClock(func() time.Time { return clock }))
	lock := func(c throttle.LockConfig) *Guard {
		l, err := throttle.NewLock(st, c)
		require.NoError(t, err)
		return Lock(l)
	}
	submit := lock(throttle.LockConfig{Name: "submit", TTL: 5 * time.Second})
	exclusive := lock(throttle.LockConfig{Name: "sync", Mode: throttle.Exclusive, TTL: 30 * time.Second})
	q, err := throttle.NewQuota(st, throttle.QuotaConfig{Name: "search"})
	require.NoError(t, err)
	search := Quota(q, throttle.Rate{Limit: 10, Window: time.Minute}, WithCost(func(r *http.Request) (int, error) {
		return len(r.Header["Cost"]), nil
	}))
	defer admit(t, submit, "42")()
	defer admit(t, exclusive, "42")()
	for range 10 {
		p, _, ok := search.job.Begin(t.Context(), flow.Call{ID: "42", Request: costly(1)})
		require.True(t, ok)
		p.End(flow.Outcome{})
	}
	down, err := throttle.NewLock(downStore{memstore.New()}, throttle.LockConfig{Name: "submit",
		Options: throttle.Options{WhenStoreFails: throttle.FailClosed, Logger: slog.New(slog.DiscardHandler)}})
	require.NoError(t, err)
	secret := errors.New("dial tcp 10.0.0.7:6379: key throttle:{submit:42} token abc")
	elsewhere := Rejection{Refusal: flow.Refusal{Reason: ReasonContended, RetryAfter: 3 * time.Second, Err: secret},
		Status: 429, Policy: "submit"}
	cases := []struct {
		name                     string
		rej                      Rejection
		retry, policy, rateLimit string
		problemType              string
	}{
		{"dedupe", refused(t, submit, flow.Call{ID: "42"}), "5", `"submit";q=1;w=5`, `"submit";r=0;t=5`, quotaExceeded},
		{"exclusive", refused(t, exclusive, flow.Call{ID: "42"}), "30", `"sync";q=1;qu="concurrent-requests"`, `"sync";r=0;t=30`,
			"about:blank"},
		{"quota", refused(t, search, flow.Call{ID: "42", Request: costly(1)}), "6", `"search";q=10;w=60`, `"search";r=0;t=6`,
			quotaExceeded},
		{"store down", refused(t, Lock(down), flow.Call{ID: "42"}),
			"1", `"submit";q=1;w=5`, "", "about:blank"},
		{"bad key", refused(t, submit, flow.Call{Err: secret}), "", `"submit";q=1;w=5`, "", reasonDoc + "ReasonBadKey"},
		{"cost above burst", refused(t, search, flow.Call{ID: "43", Request: costly(11)}), "", `"search";q=10;w=60`, "", "about:blank"},
		// Made elsewhere than in a Guard: no policy is known, whatever
		// the name says, so no RateLimit field.
		{"no guard", elsewhere, "3", "", "", quotaExceeded},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := written(&c.rej)
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

// costly is a request that costs n under TestWrite's cost function.
func costly(n int) *http.Request {
	r, _ := http.NewRequest(http.MethodGet, "/", nil)
	r.Header["Cost"] = make([]string, n)
	return r
}
