package guard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/go-throttle/throttle/internal/storekit"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// written is what Write answers rej with.
func written(rej *Rejection) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	rej.Write(rec)
	return rec
}

// uncached is what Write answers rej with when nothing comes from a
// Guard's caches: every field and the body built for this answer alone.
func uncached(rej *Rejection) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h := rec.Header()
	if s := rej.retryAfter(); s > 0 {
		h["Retry-After"] = []string{strconv.FormatInt(s, 10)}
	}
	if g := rej.g; g != nil {
		h["Ratelimit-Policy"] = []string{policyField(g)}
		switch {
		case rej.Reason == ReasonContended && rej.Decision != nil:
			r := rej.plan.rates[0]
			h["Ratelimit-Policy"] = []string{policyItem(rej.plan.names[0], r)}
			t := int64(-1)
			if wait := storekit.NextRefill(r.Store(), *rej.Decision); wait > 0 {
				t = seconds(wait)
			}
			h["Ratelimit"] = []string{limitField(rej.plan.names[0], rej.Decision.Remaining, t)}
		case rej.Reason == ReasonContended:
			h["Ratelimit"] = []string{limitField(g.name, 0, rej.retryAfter())}
		}
	}
	h["Content-Type"] = []string{"application/problem+json"}
	h["Cache-Control"] = []string{"no-store"}
	h["X-Content-Type-Options"] = []string{"nosniff"}
	rec.WriteHeader(rej.Status)
	_, _ = rec.Write(rej.buildBody())
	return rec
}

// TestCachedAnswers checks that the answers a Guard caches (see cache.go)
// are those built for the same rejection without the cache, also when the
// application's rejection handler changed the rejection first.
func TestCachedAnswers(t *testing.T) {
	lock := func(c throttle.LockConfig, opts ...Option) func(t *testing.T) *Guard {
		return func(t *testing.T) *Guard {
			l, err := throttle.NewLock(memstore.New(), c)
			require.NoError(t, err)
			return Lock(l, opts...)
		}
	}
	for _, c := range []struct {
		name  string
		guard func(t *testing.T) *Guard
	}{
		{"submit", lock(throttle.LockConfig{Name: "submit"})},
		{"slow", lock(throttle.LockConfig{Name: "slow", Mode: throttle.Cooldown, TTL: 10 * time.Minute})}, // t beyond the cache
		{"job", lock(throttle.LockConfig{Name: "job", Mode: throttle.Exclusive})},
		{"teapot", lock(throttle.LockConfig{Name: "teapot"}, WithStatus(http.StatusTeapot))},
		{"search", func(t *testing.T) *Guard {
			q, err := throttle.NewQuota(memstore.New(), throttle.QuotaConfig{Name: "search"})
			require.NoError(t, err)
			return Quota(q, throttle.Rate{Limit: 1, Window: time.Minute})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := c.guard(t)
			_, tk, rej := g.begin1(context.Background(), "u")
			require.Nil(t, rej, "first request turned away")
			defer tk.finish(context.Background(), http.StatusOK, false)
			for i, change := range []func(*Rejection){
				func(*Rejection) {}, // the cached answer, checked below
				func(r *Rejection) { r.Status = http.StatusServiceUnavailable },
				// The name is for logs and the handler's own answer: the
				// fields and body Write sends are still the Guard's.
				func(r *Rejection) { r.Policy = "other" },
				func(r *Rejection) { r.RetryAfter = -1 },
				func(r *Rejection) { r.Reason = ReasonBadKey },
				// A rejection made elsewhere has no Guard, and no policy.
				func(r *Rejection) { r.g = nil },
			} {
				for range 2 { // the second answer comes from the cache filled by the first
					_, _, rej := g.begin1(context.Background(), "u")
					require.NotNil(t, rej, "duplicate admitted")
					require.Same(t, g, rej.g, "the rejection's guard")
					change(rej)
					got, want := written(rej), uncached(rej)
					if i == 0 {
						require.Same(t, &g.policyField[0], &got.Header()["Ratelimit-Policy"][0],
							"the guard's rejection was not answered from its cache")
					}
					require.Equal(t, want.Code, got.Code, "change %d: status", i)
					require.Equal(t, want.Header(), got.Header(), "change %d: header", i)
					require.Equal(t, want.Body.String(), got.Body.String(), "change %d: body", i)
				}
			}
		})
	}
}

// TestBodyNotShared checks that Body, unlike Write, returns a body of the
// caller's own: changing it changes no later answer.
func TestBodyNotShared(t *testing.T) {
	l, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "submit"})
	require.NoError(t, err)
	g := Lock(l)
	rej := g.rejection(&throttle.ContendedError{RetryAfter: time.Second})
	b := rej.buildBody()
	want := string(b)
	clear(b)
	require.Equal(t, want, written(rej).Body.String(), "answer after the caller changed Body's bytes")
}

// TestQuotaFields checks that the cached RateLimit values of Quota
// decisions are those limitField builds, for every r near both ends of
// quotas smaller and larger than the cache, and every t in and beyond it.
func TestQuotaFields(t *testing.T) {
	for _, burst := range []int{1, 10, quotaEdge - 1, quotaEdge, quotaEdge + 1, 2*quotaEdge - 1, 2 * quotaEdge, 200, 10_000} {
		for _, window := range []time.Duration{time.Second, 6 * time.Second, time.Minute, time.Hour} {
			p := mustPlan("q", []throttle.Rate{{Limit: burst, Burst: burst, Window: window}})
			for r := range burst + 1 {
				if r > 3*quotaEdge && burst-r > 3*quotaEdge {
					continue
				}
				for ts := int64(-1); ts <= quotaSeconds+2; ts++ {
					want := limitField("q", r, ts)
					for range 2 { // made, then cached
						require.Equal(t, []string{want}, p.quotaLimit(0, r, ts), "burst %d window %v r=%d t=%d", burst, window, r, ts)
					}
				}
			}
		}
	}
}
