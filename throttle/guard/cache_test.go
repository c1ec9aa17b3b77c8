package guard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// written is what Write answers rej with.
func written(rej *Rejection) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	Write(rec, rej)
	return rec
}

// TestCachedAnswers checks that the answers a Guard caches (see cache.go)
// are those Write builds for the same rejection without the cache, also
// when the application's rejection handler changed the rejection first.
func TestCachedAnswers(t *testing.T) {
	for _, p := range []throttle.Policy{
		{Name: "submit"},
		{Name: "slow", Mode: throttle.Cooldown, Window: 10 * time.Minute}, // t beyond the cache
		{Name: "job", Mode: throttle.Exclusive},
		{Name: "teapot", RejectStatus: http.StatusTeapot},
	} {
		l, err := throttle.New(memstore.New(), p)
		if err != nil {
			t.Fatal(err)
		}
		g := New(l)
		_, tk, rej := g.begin1(context.Background(), "u")
		if rej != nil {
			t.Fatalf("%s: first request turned away: %+v", p.Name, rej)
		}
		defer tk.finish(context.Background(), http.StatusOK, false)
		for c, change := range []func(*Rejection){
			func(*Rejection) {}, // the cached answer, checked below
			func(r *Rejection) { r.Status = http.StatusServiceUnavailable },
			// A handler that wants another policy shown swaps the
			// pointer (the Guard's policy is shared); an equal copy is
			// no longer the Guard's either.
			func(r *Rejection) { c := *r.Policy; r.Policy = &c },
			func(r *Rejection) { c := *r.Policy; c.Name = "other"; r.Policy = &c },
			func(r *Rejection) { c := *r.Policy; c.Mode = throttle.Quota; r.Policy = &c },
			func(r *Rejection) { c := *r.Policy; c.Window = time.Hour; r.Policy = &c },
			func(r *Rejection) { r.Policy = nil },
			func(r *Rejection) { r.RetryAfter = -1 },
			func(r *Rejection) { r.Reason = ReasonBadKey },
		} {
			for range 2 { // the second answer comes from the cache filled by the first
				_, _, rej := g.begin1(context.Background(), "u")
				if rej == nil || rej.g != g {
					t.Fatalf("%s: duplicate: %+v, want a rejection of the guard", p.Name, rej)
				}
				change(rej)
				uncached := *rej
				uncached.g = nil
				got, want := written(rej), written(&uncached)
				if c == 0 && &got.Header()["Ratelimit-Policy"][0] != &g.policyField[0] {
					t.Fatalf("%s: the guard's rejection was not answered from its cache", p.Name)
				}
				if got.Code != want.Code || !reflect.DeepEqual(got.Header(), want.Header()) || got.Body.String() != want.Body.String() {
					t.Fatalf("%s: cached answer %d %v %q, want %d %v %q", p.Name,
						got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
				}
			}
		}
	}
}

// TestBodyNotShared checks that Body, unlike Write, returns a body of the
// caller's own: changing it changes no later answer.
func TestBodyNotShared(t *testing.T) {
	l, err := throttle.New(memstore.New(), throttle.Policy{Name: "submit"})
	if err != nil {
		t.Fatal(err)
	}
	g := New(l)
	rej := g.contended(throttle.ErrContended, &throttle.ContendedError{RetryAfter: time.Second})
	b := Body(rej)
	want := string(b)
	clear(b)
	if got := written(rej).Body.String(); got != want {
		t.Fatalf("answer after the caller changed Body's bytes: %q, want %q", got, want)
	}
}

// TestQuotaFields checks that the cached RateLimit values of Quota
// decisions are those limitField builds, for every r near both ends of
// quotas smaller and larger than the cache, and every t in and beyond it.
func TestQuotaFields(t *testing.T) {
	for _, burst := range []int{1, 10, quotaEdge - 1, quotaEdge, quotaEdge + 1, 2*quotaEdge - 1, 2 * quotaEdge, 200, 10_000} {
		for _, window := range []time.Duration{time.Second, 6 * time.Second, time.Minute, time.Hour} {
			p := throttle.Policy{Name: "q", Mode: throttle.Quota, Limit: burst, Burst: burst, Window: window}
			q := newQuotaFields(&p)
			for r := range burst + 1 {
				if r > 3*quotaEdge && burst-r > 3*quotaEdge {
					continue
				}
				for ts := int64(-1); ts <= quotaSeconds+2; ts++ {
					want := limitField("q", r, ts)
					for range 2 { // made, then cached
						if got := q.get(r, ts); len(got) != 1 || got[0] != want {
							t.Fatalf("burst %d window %v r=%d t=%d: %q, want %q", burst, window, r, ts, got, want)
						}
					}
				}
			}
		}
	}
}
