package guard

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/flow"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/overload"
)

// TestCachedAnswers checks that the problem body a Guard caches for a
// duplicate is the one built for the same rejection without the cache,
// also when the application's rejection handler changed the rejection.
func TestCachedAnswers(t *testing.T) {
	lock := func(c throttle.LockConfig, opts ...Option) func(t *testing.T) *Guard {
		return func(t *testing.T) *Guard { return Lock(newLock(t, c), opts...) }
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
			return Quota(q, throttle.Rate{Name: "minute", Limit: 1, Window: time.Minute})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := c.guard(t)
			defer admit(t, g, "u")()
			for i, change := range []func(*Rejection){
				func(*Rejection) {}, // the cached answer, checked below
				func(r *Rejection) { r.Status = http.StatusServiceUnavailable },
				func(r *Rejection) { r.Detail = "other" },
				func(r *Rejection) { r.Reason = ReasonBadKey },
				// A rejection made elsewhere has no Guard, and no policy.
				func(r *Rejection) { r.g = nil },
			} {
				rej := refused(t, g, flow.Call{ID: "u"})
				change(&rej)
				got := written(&rej).Body.String()
				if i == 0 {
					require.Same(t, &g.contendedBody[0], &rej.body()[0], "the guard's rejection was not answered from its cache")
				}
				require.Equal(t, string(rej.buildBody(rej.Violated())), got, "change %d: body", i)
			}
		})
	}
}

// TestBodyNotShared checks that a body built for one answer is its own:
// changing it changes no later answer.
func TestBodyNotShared(t *testing.T) {
	g := Lock(newLock(t, throttle.LockConfig{Name: "submit"}))
	defer admit(t, g, "u")()
	rej := refused(t, g, flow.Call{ID: "u"})
	b := rej.buildBody(rej.Violated())
	want := string(b)
	clear(b)
	require.Equal(t, want, written(&rej).Body.String(), "answer after the caller changed a built body")
}

// TestOverloadedAnswerCached checks that an Overload guard answers a shed
// request with the body built once for every shed request, the one built
// for it without the cache, and builds its own when the application's
// rejection handler changed the rejection.
func TestOverloadedAnswerCached(t *testing.T) {
	l, err := overload.New(overload.Config{Name: "report", MinLimit: 1, MaxLimit: 1})
	require.NoError(t, err)
	g := Overload(l, nil)
	defer admit(t, g, "")()
	shedFirst := Overload(l, func(*http.Request) overload.Priority { return overload.ShedFirst })
	for i, change := range []func(*Rejection){
		func(*Rejection) {}, // the cached answer, checked below
		func(r *Rejection) { r.Status = http.StatusTooManyRequests },
		func(r *Rejection) { r.Detail = "other" },
	} {
		rej := refused(t, shedFirst, flow.Call{Request: httptest.NewRequest(http.MethodGet, "/api/report", nil)})
		require.Equal(t, ReasonOverloaded, rej.Reason)
		change(&rej)
		got := written(&rej).Body.String()
		if i == 0 {
			require.Same(t, &overloadedBody[0], &rej.body()[0], "the shed request was not answered from the cache")
		} else {
			require.NotSame(t, &overloadedBody[0], &rej.body()[0], "change %d answered from the cache", i)
		}
		require.Equal(t, string(rej.buildBody(rej.Violated())), got, "change %d: body", i)
	}
}
