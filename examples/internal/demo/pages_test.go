package demo_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/examples/internal/demo"
	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/nethttp"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// submitTTL is the window of the "submit" lock the rejections come from:
// a duplicate sent at once is told to wait a little over 3 s, 4 s rounded
// up.
const submitTTL = 3200 * time.Millisecond

// downStore is a store whose acquisitions fail. Its error wraps
// store.ErrNotApplied (nothing was taken), which spares the lock a
// background release.
type downStore struct{ *memstore.Store }

func (downStore) Acquire(context.Context, store.Request) (store.Grant, error) {
	return store.Grant{}, fmt.Errorf("demo test: store down: %w", store.ErrNotApplied)
}

// rejected sends r through a POST /submit middleware of a "submit" lock on
// st keyed by key, as the examples build it, and returns the rejection its
// reject handler got (nil when the request went ahead).
func rejected(t *testing.T, st store.Store, fail throttle.FailMode, key keyfuncs.Func, rs ...*http.Request) *guard.Rejection {
	t.Helper()
	lock, err := throttle.NewLock(st, throttle.LockConfig{Name: "submit", TTL: submitTTL,
		Options: throttle.Options{WhenStoreFails: fail}})
	require.NoError(t, err)
	var rej *guard.Rejection
	h := nethttp.Middleware(guard.Lock(lock), key, nethttp.WithRejectHandler(
		func(_ http.ResponseWriter, _ *http.Request, r *guard.Rejection) { rej = r }))(
		http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	for _, r := range rs {
		rej = nil
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	return rej
}

// submission returns a POST /submit from user (none when empty) with body.
func submission(user, body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/submit", strings.NewReader(body))
	if user != "" {
		r.Header.Set("X-User-ID", user)
	}
	return r
}

// rejections are the ways the middleware of POST /submit can turn a
// request away, as a "submit" lock's guard turns them away.
func rejections(t *testing.T) map[string]*guard.Rejection {
	t.Helper()
	user := keyfuncs.Header("X-User-ID")
	rejs := map[string]*guard.Rejection{
		"duplicate": rejected(t, memstore.New(), 0, user, submission("42", ""), submission("42", "")),
		"bad key":   rejected(t, memstore.New(), 0, user, submission("", "")),
		"body too large": rejected(t, memstore.New(), 0, keyfuncs.BodyHash(16),
			submission("", strings.Repeat("x", 100))),
		"store unavailable": rejected(t, downStore{memstore.New()}, throttle.FailClosed, user, submission("42", "")),
	}
	want := map[string]struct {
		status int
		reason guard.Reason
	}{
		"duplicate":         {http.StatusTooManyRequests, guard.ReasonContended},
		"bad key":           {http.StatusBadRequest, guard.ReasonBadKey},
		"body too large":    {http.StatusRequestEntityTooLarge, guard.ReasonBadKey},
		"store unavailable": {http.StatusServiceUnavailable, guard.ReasonStoreUnavailable},
	}
	for name, rej := range rejs {
		require.NotNil(t, rej, "%s: the request was not rejected", name)
		require.Equal(t, want[name].status, rej.Status, name)
		require.Equal(t, want[name].reason, rej.Reason, name)
		require.Equal(t, "submit", rej.Policy, name)
	}
	return rejs
}

// fieldsWriter returns a recorder holding what the middleware sets before
// it calls a rejection handler: rej's Retry-After and RateLimit fields.
func fieldsWriter(rej *guard.Rejection) *httptest.ResponseRecorder {
	full, w := httptest.NewRecorder(), httptest.NewRecorder()
	rej.Write(full)
	for _, k := range []string{"Retry-After", "Ratelimit-Policy", "Ratelimit"} {
		if v, ok := full.Header()[k]; ok {
			w.Header()[k] = v
		}
	}
	return w
}

// TestRejectPageOtherClients: a client whose Accept does not name
// text/html gets exactly rej.Write's answer, the adapters' default.
func TestRejectPageOtherClients(t *testing.T) {
	for name, rej := range rejections(t) {
		for _, accept := range []string{"", "*/*", "application/json", "application/problem+json"} {
			r := httptest.NewRequest(http.MethodPost, "/submit", nil)
			if accept != "" {
				r.Header.Set("Accept", accept)
			}
			got, want := fieldsWriter(rej), httptest.NewRecorder()
			demo.RejectPage(got, r, rej)
			rej.Write(want)
			assert.Equal(t, want.Code, got.Code, "%s, Accept %q: status", name, accept)
			assert.Equal(t, want.Body.String(), got.Body.String(), "%s, Accept %q: body", name, accept)
			assert.Equal(t, want.Header(), got.Header(), "%s, Accept %q: header", name, accept)
		}
	}
}

// TestRejectPageBrowser: a browser gets a page with the rejection's status
// and standard fields, never problem+json; a duplicate's page says
// "already submitted" and the wait Retry-After gives.
func TestRejectPageBrowser(t *testing.T) {
	for name, rej := range rejections(t) {
		r := httptest.NewRequest(http.MethodPost, "/submit", nil)
		r.Header.Set("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
		w := fieldsWriter(rej)
		fields := w.Header().Clone()
		demo.RejectPage(w, r, rej)

		assert.Equal(t, rej.Status, w.Code, "%s: status", name)
		assert.Equal(t, "text/html; charset=utf-8", w.Header().Get("Content-Type"), "%s: Content-Type", name)
		assert.NotEmpty(t, fields.Get("RateLimit-Policy"), "%s: the rejection has no RateLimit-Policy", name)
		for k := range fields {
			assert.Equal(t, fields.Get(k), w.Header().Get(k), "%s: %s", name, k)
		}
		body := w.Body.String()
		assert.NotContains(t, body, `"status":`, "%s: not a page", name)
		assert.Contains(t, body, "<!doctype html>", "%s: not a page", name)
		if rej.Reason == guard.ReasonContended {
			// A duplicate sent at once waits a little over 3 s of the
			// 3.2 s window: RetryAfter, Retry-After and the page say 4,
			// rounded up.
			require.Equal(t, 4*time.Second, rej.RetryAfter, name)
			want := "4"
			assert.Equal(t, want, w.Header().Get("Retry-After"), "%s: Retry-After", name)
			assert.Contains(t, body, "Already submitted", name)
			assert.Contains(t, body, "Try again in "+want+" s", name)
			assert.NotEmpty(t, fields.Get("RateLimit"), "%s: a duplicate's page has no RateLimit field", name)
			continue
		}
		assert.Contains(t, body, html.EscapeString(rej.Detail), "%s: the page does not give the detail", name)
		if ra := w.Header().Get("Retry-After"); ra != "" {
			assert.Contains(t, body, "Try again in "+ra+" s", "%s: the page does not give the wait of Retry-After", name)
		}
	}
}

// TestFormPageCookie: GET / sets the user cookie only when the request has
// none, and the page says who the user is.
func TestFormPageCookie(t *testing.T) {
	h := demo.FormPage(demo.Settings{Window: 5 * time.Second}, "test")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
	cookies := w.Result().Cookies()
	require.Equal(t, http.StatusOK, w.Code, "GET / without a cookie")
	require.Len(t, cookies, 1, "GET / without a cookie: want one %s cookie", demo.UserCookie)
	require.Equal(t, demo.UserCookie, cookies[0].Name)
	require.NotEmpty(t, cookies[0].Value)
	body := w.Body.String()
	assert.Contains(t, body, demo.UserCookie, "the page does not say the cookie is the user")
	assert.Contains(t, body, "two tabs are one user", "the page does not say the cookie is the user")

	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.AddCookie(cookies[0])
	again := httptest.NewRecorder()
	h.ServeHTTP(again, r)
	assert.Equal(t, http.StatusOK, again.Code, "GET / with the cookie")
	assert.Empty(t, again.Result().Cookies(), "GET / with the cookie set one")

	// Each browser gets its own.
	other := httptest.NewRecorder()
	h.ServeHTTP(other, httptest.NewRequest(http.MethodGet, "/", nil))
	oc := other.Result().Cookies()
	require.Len(t, oc, 1, "a second browser")
	assert.NotEqual(t, cookies[0].Value, oc[0].Value, "a second browser got the first one's cookie")
}
