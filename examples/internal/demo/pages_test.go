package demo_test

import (
	"html"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-throttle/throttle/examples/internal/demo"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
)

// rejections are the ways the middleware of POST /submit can turn a
// request away.
func rejections() map[string]*guard.Rejection {
	p := throttle.Policy{Name: "submit", Window: 5 * time.Second}
	return map[string]*guard.Rejection{
		"duplicate":         {Status: http.StatusTooManyRequests, Reason: guard.ReasonContended, RetryAfter: 3200 * time.Millisecond, Policy: &p},
		"bad key":           {Status: http.StatusBadRequest, Reason: guard.ReasonBadKey, Policy: &p},
		"body too large":    {Status: http.StatusRequestEntityTooLarge, Reason: guard.ReasonBadKey, Policy: &p},
		"store unavailable": {Status: http.StatusServiceUnavailable, Reason: guard.ReasonStoreUnavailable, RetryAfter: time.Second, Policy: &p},
	}
}

// TestRejectPageOtherClients: a client whose Accept does not name
// text/html gets exactly guard.Write's answer, the adapters' default.
func TestRejectPageOtherClients(t *testing.T) {
	for name, rej := range rejections() {
		for _, accept := range []string{"", "*/*", "application/json", "application/problem+json"} {
			r := httptest.NewRequest(http.MethodPost, "/submit", nil)
			if accept != "" {
				r.Header.Set("Accept", accept)
			}
			got, want := httptest.NewRecorder(), httptest.NewRecorder()
			demo.RejectPage(got, r, rej)
			guard.Write(want, rej)
			if got.Code != want.Code || got.Body.String() != want.Body.String() {
				t.Errorf("%s, Accept %q: got %d %q, want %d %q", name, accept, got.Code, got.Body, want.Code, want.Body)
			}
			for k := range want.Header() {
				if g, w := got.Header().Values(k), want.Header().Values(k); strings.Join(g, "\n") != strings.Join(w, "\n") {
					t.Errorf("%s, Accept %q: %s %q, want %q", name, accept, k, g, w)
				}
			}
			if len(got.Header()) != len(want.Header()) {
				t.Errorf("%s, Accept %q: header %v, want %v", name, accept, got.Header(), want.Header())
			}
		}
	}
}

// TestRejectPageBrowser: a browser gets a page with the rejection's status
// and standard fields, never problem+json; a duplicate's page says
// "already submitted" and the wait Retry-After gives.
func TestRejectPageBrowser(t *testing.T) {
	for name, rej := range rejections() {
		r := httptest.NewRequest(http.MethodPost, "/submit", nil)
		r.Header.Set("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
		w := httptest.NewRecorder()
		demo.RejectPage(w, r, rej)

		fields := http.Header{}
		guard.SetHeaders(fields, rej)
		if w.Code != rej.Status {
			t.Errorf("%s: status %d, want %d", name, w.Code, rej.Status)
		}
		if ct := w.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
			t.Errorf("%s: Content-Type %q, want text/html", name, ct)
		}
		for k := range fields {
			if got, want := w.Header().Get(k), fields.Get(k); got != want {
				t.Errorf("%s: %s %q, want %q", name, k, got, want)
			}
		}
		body := w.Body.String()
		if strings.Contains(body, `"status":`) || !strings.Contains(body, "<!doctype html>") {
			t.Errorf("%s: not a page:\n%s", name, body)
		}
		if rej.Reason == guard.ReasonContended {
			if want := "Try again in 4 s"; !strings.Contains(body, "Already submitted") || !strings.Contains(body, want) ||
				w.Header().Get("Retry-After") != "4" {
				t.Errorf("%s: page does not say already submitted and %q (Retry-After %q):\n%s", name, want, w.Header().Get("Retry-After"), body)
			}
			continue
		}
		if detail := html.EscapeString(guard.Detail(rej)); !strings.Contains(body, detail) {
			t.Errorf("%s: page does not say %q:\n%s", name, detail, body)
		}
		if ra := w.Header().Get("Retry-After"); ra != "" && !strings.Contains(body, "Try again in "+ra+" s") {
			t.Errorf("%s: page does not give the wait of Retry-After %q:\n%s", name, ra, body)
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
	if w.Code != http.StatusOK || len(cookies) != 1 || cookies[0].Name != demo.UserCookie || cookies[0].Value == "" {
		t.Fatalf("GET / without a cookie: %d, cookies %v; want 200 and one %s cookie", w.Code, cookies, demo.UserCookie)
	}
	if body := w.Body.String(); !strings.Contains(body, demo.UserCookie) || !strings.Contains(body, "two tabs are one user") {
		t.Errorf("the page does not say the cookie is the user:\n%s", body)
	}

	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.AddCookie(cookies[0])
	again := httptest.NewRecorder()
	h.ServeHTTP(again, r)
	if again.Code != http.StatusOK || len(again.Result().Cookies()) != 0 {
		t.Errorf("GET / with the cookie: %d, cookies %v; want 200 and none set", again.Code, again.Result().Cookies())
	}

	// Each browser gets its own.
	other := httptest.NewRecorder()
	h.ServeHTTP(other, httptest.NewRequest(http.MethodGet, "/", nil))
	if oc := other.Result().Cookies(); len(oc) != 1 || oc[0].Value == cookies[0].Value {
		t.Errorf("a second browser got cookies %v, want one other than %q", oc, cookies[0].Value)
	}
}
