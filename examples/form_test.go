package examples_test

import (
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-throttle/throttle/internal/redistest"
)

// userCookie is the cookie GET / sets (demo.UserCookie).
const userCookie = "demo_user"

// chromeAccept is the Accept header of Chromium's navigations and form
// submissions: it names text/html, so the examples answer with pages.
const chromeAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp," +
	"image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"

// acceptedJSON is each example's JSON body for an accepted submission, as
// it was before the form existed: content negotiation must not change a
// byte of it.
var acceptedJSON = map[string]string{
	"nethttp": `{"server":"nethttp","status":"accepted"}` + "\n",
	"gin":     `{"server":"gin","status":"accepted"}`,
	"echo":    `{"server":"echo","status":"accepted"}` + "\n",
	"fiber":   `{"server":"fiber","status":"accepted"}` + "\n",
}

// pageReply is an answer with the fields the form tests look at.
type pageReply struct {
	reply
	header http.Header
}

// formRequest sends method path with accept (none when ""), the user
// cookie when cookie is not "", X-User-ID when user is not "", and form
// as an application/x-www-form-urlencoded body when it is not "".
func formRequest(c *http.Client, a *app, method, path, accept, cookie, user, form string) pageReply {
	var body io.Reader
	if form != "" {
		body = strings.NewReader(form)
	}
	req, err := http.NewRequest(method, a.url+path, body)
	if err != nil {
		return pageReply{reply: reply{app: a, err: err}}
	}
	if form != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: userCookie, Value: cookie})
	}
	if user != "" {
		req.Header.Set("X-User-ID", user)
	}
	r := pageReply{reply: reply{start: time.Now(), app: a}}
	resp, err := c.Do(req)
	if err != nil {
		r.err = err
		return r
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	r.end = time.Now()
	r.status, r.body, r.err, r.header = resp.StatusCode, string(b), err, resp.Header
	r.retryAfter = resp.Header.Get("Retry-After")
	r.policy = resp.Header.Get("RateLimit-Policy")
	r.rateLimit = resp.Header.Get("RateLimit")
	r.contentType = resp.Header.Get("Content-Type")
	return r
}

// setCookie returns the user cookie r sets, or nil.
func setCookie(r pageReply) *http.Cookie {
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == userCookie {
			return c
		}
	}
	return nil
}

// checkPage requires an HTML answer with status whose #result element says
// so and whose text contains want.
func checkPage(t *testing.T, what string, r pageReply, status int, want string) {
	t.Helper()
	name := r.app.name
	if r.err != nil || r.status != status {
		t.Errorf("%s %s: got %d %v %.300s, want %d", name, what, r.status, r.err, r.body, status)
		return
	}
	if !strings.HasPrefix(r.contentType, "text/html") {
		t.Errorf("%s %s: Content-Type %q, want text/html", name, what, r.contentType)
	}
	if !strings.Contains(r.body, `id="result"`) || !strings.Contains(r.body, `data-status="`+strconv.Itoa(status)+`"`) {
		t.Errorf("%s %s: page has no #result with data-status %d:\n%s", name, what, status, r.body)
	}
	if !strings.Contains(r.body, want) {
		t.Errorf("%s %s: page does not say %q:\n%s", name, what, want, r.body)
	}
	if strings.Contains(r.body, `"type":`) || strings.Contains(r.body, `"status":`) {
		t.Errorf("%s %s: page holds JSON:\n%s", name, what, r.body)
	}
}

// retryIn matches the wait the "already submitted" page gives.
var retryIn = regexp.MustCompile(`[Tt]ry again in (\d+) s`)

// checkDuplicatePage requires the page a browser gets for a duplicate: 429
// "already submitted, try again in N s", N being the Retry-After the page
// comes with, and the RateLimit fields of the submit policy.
func checkDuplicatePage(t *testing.T, what string, r pageReply, win time.Duration) {
	t.Helper()
	checkPage(t, what, r, http.StatusTooManyRequests, "Already submitted")
	name := r.app.name
	secs, err := strconv.Atoi(r.retryAfter)
	if max := int(win / time.Second); err != nil || secs < 1 || secs > max {
		t.Errorf("%s %s: Retry-After %q, want 1..%d", name, what, r.retryAfter, max)
	}
	if m := retryIn.FindStringSubmatch(r.body); m == nil || m[1] != r.retryAfter {
		t.Errorf("%s %s: page gives the wait %v, want Retry-After's %q", name, what, m, r.retryAfter)
	}
	if want := `"submit";q=1;w=` + strconv.Itoa(int(win/time.Second)); r.policy != want {
		t.Errorf("%s %s: RateLimit-Policy %q, want %q", name, what, r.policy, want)
	}
	if want := `"submit";r=0;t=` + r.retryAfter; r.rateLimit != want {
		t.Errorf("%s %s: RateLimit %q, want %q", name, what, r.rateLimit, want)
	}
}

// TestFormPage checks GET / in each example: an HTML order form posting to
// /submit, whatever the Accept header, that sets the user cookie once
// (random, HttpOnly, SameSite=Lax, Path=/) and says that the cookie is the
// user; and that the cookie then keys /submit, after X-User-ID and before
// the client IP.
func TestFormPage(t *testing.T) {
	skipUnlessProcesses(t)
	t.Parallel()
	const win = time.Minute // nothing expires during the test
	c := newClient(t)
	for _, name := range exampleNames {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := startApp(t, name, "-window", win.String())

			first := formRequest(c, a, http.MethodGet, "/", chromeAccept, "", "", "")
			if first.err != nil || first.status != http.StatusOK || !strings.HasPrefix(first.contentType, "text/html") {
				t.Fatalf("%s GET /: got %d %q %v, want 200 text/html", name, first.status, first.contentType, first.err)
			}
			for _, want := range []string{`<form method="post" action="/submit">`, `name="item"`, `name="quantity"`,
				`name="fail" type="checkbox" value="1"`, `id="submit" type="submit"`, userCookie + `</code> cookie`} {
				if !strings.Contains(first.body, want) {
					t.Errorf("%s GET /: page lacks %q:\n%s", name, want, first.body)
				}
			}
			ck := setCookie(first)
			if ck == nil {
				t.Fatalf("%s GET / without a cookie: no %s cookie set (Set-Cookie %q)", name, userCookie, first.header.Values("Set-Cookie"))
			}
			if len(ck.Value) < 20 || !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode || ck.Path != "/" {
				t.Errorf("%s GET /: cookie %q, want a random value, HttpOnly, SameSite=Lax, Path=/", name, first.header.Get("Set-Cookie"))
			}
			if again := formRequest(c, a, http.MethodGet, "/", chromeAccept, ck.Value, "", ""); again.status != http.StatusOK || setCookie(again) != nil {
				t.Errorf("%s GET / with the cookie: got %d, Set-Cookie %q; want 200 and no new cookie", name, again.status, again.header.Values("Set-Cookie"))
			}
			other := setCookie(formRequest(c, a, http.MethodGet, "/", "*/*", "", "", ""))
			if other == nil || other.Value == ck.Value {
				t.Fatalf("%s GET / by curl: cookie %v, want a second, different cookie", name, other)
			}

			// The cookie keys /submit: a curl-like client sending it gets
			// the JSON answers, keyed by it rather than by the IP that
			// every request here shares.
			r := formRequest(c, a, http.MethodPost, "/submit", "*/*", ck.Value, "", "item=tea")
			checkAccepted(t, a, "submit with the cookie", r.reply)
			checkDuplicate(t, name, ck.Value, formRequest(c, a, http.MethodPost, "/submit", "*/*", ck.Value, "", "item=tea").reply, win)
			checkAccepted(t, a, "submit with another cookie", formRequest(c, a, http.MethodPost, "/submit", "*/*", other.Value, "", "").reply)
			checkAccepted(t, a, "submit with neither cookie nor X-User-ID (the IP)", formRequest(c, a, http.MethodPost, "/submit", "*/*", "", "", "").reply)
			// X-User-ID comes first: with it, the used cookie does not matter.
			checkAccepted(t, a, "submit with X-User-ID and a used cookie", formRequest(c, a, http.MethodPost, "/submit", "*/*", ck.Value, "una", "").reply)
			checkDuplicate(t, name, "una", formRequest(c, a, http.MethodPost, "/submit", "*/*", "fresh", "una", "").reply, win)
			a.stop(t, syscall.SIGTERM)
		})
	}
}

// TestSubmitNegotiation checks the answers of POST /submit in each
// example: a client whose Accept does not name text/html (curl's */*,
// application/json, none) gets the JSON and problem+json answers byte for
// byte as before; a browser gets pages with the same statuses and fields:
// "accepted", the 422 of fail=1, the 429 "already submitted, try again in
// N s", the 413 of an oversized form.
func TestSubmitNegotiation(t *testing.T) {
	skipUnlessProcesses(t)
	t.Parallel()
	const win = time.Minute
	c := newClient(t)
	for _, name := range exampleNames {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := startApp(t, name, "-window", win.String())
			for i, accept := range []string{"*/*", "application/json", "", "application/json, text/plain;q=0.5"} {
				user := "api-" + strconv.Itoa(i)
				r := formRequest(c, a, http.MethodPost, "/submit", accept, "", user, "item=tea")
				checkAccepted(t, a, "submit with Accept "+accept, r.reply)
				if r.body != acceptedJSON[name] {
					t.Errorf("%s submit with Accept %q: body %q, want %q", name, accept, r.body, acceptedJSON[name])
				}
				checkDuplicate(t, name, user, formRequest(c, a, http.MethodPost, "/submit", accept, "", user, "item=tea").reply, win)
				checkRejectedSubmission(t, "fail=1 with Accept "+accept, formRequest(c, a, http.MethodPost, "/submit", accept, "", user+"-f", "fail=1").reply)
			}

			// A browser, known by its cookie.
			ok := formRequest(c, a, http.MethodPost, "/submit", chromeAccept, "browser-1", "", "item=Green+tea&quantity=3")
			checkPage(t, "browser submit", ok, http.StatusOK, "Order accepted")
			if !strings.Contains(ok.body, "3 × Green tea") {
				t.Errorf("%s browser submit: the page does not show the order:\n%s", name, ok.body)
			}
			if !strings.Contains(ok.body, userCookie+" cookie") {
				t.Errorf("%s browser submit: the page does not say the cookie identified the user:\n%s", name, ok.body)
			}
			dup := formRequest(c, a, http.MethodPost, "/submit", chromeAccept, "browser-1", "", "item=Green+tea&quantity=3")
			checkDuplicatePage(t, "browser duplicate", dup, win)

			// fail=1: a page for the 422, and the key is free at once.
			failed := formRequest(c, a, http.MethodPost, "/submit", chromeAccept, "browser-2", "", "item=tea&fail=1")
			checkPage(t, "browser fail=1", failed, http.StatusUnprocessableEntity, "Order failed")
			checkPage(t, "browser submit after fail=1", formRequest(c, a, http.MethodPost, "/submit", chromeAccept, "browser-2", "", "item=tea"),
				http.StatusOK, "Order accepted")

			// A form too large to read: a page, not a problem.
			big := "item=" + strings.Repeat("x", 70<<10)
			checkPage(t, "browser oversized form", formRequest(c, a, http.MethodPost, "/submit", chromeAccept, "browser-3", "", big),
				http.StatusRequestEntityTooLarge, "too large")
			a.stop(t, syscall.SIGTERM)
		})
	}
}

// TestCookieSharedRedis shows that the four examples build the same key
// from the user cookie: pointed at one Redis, a browser's submission to one
// of them turns its copies to the other two away.
func TestCookieSharedRedis(t *testing.T) {
	skipUnlessProcesses(t)
	t.Parallel()
	srv := redistest.Start(t)
	const win = time.Minute
	args := []string{"-redis", srv.Addr, "-window", win.String()}
	apps := []*app{startApp(t, "nethttp", args...), startApp(t, "gin", args...), startApp(t, "echo", args...),
		startApp(t, "fiber", args...)}
	c := newClient(t)
	for i, first := range apps {
		cookie := "shared-" + strconv.Itoa(i)
		checkAccepted(t, first, "submit with cookie "+cookie, formRequest(c, first, http.MethodPost, "/submit", "*/*", cookie, "", "").reply)
		for _, a := range apps {
			if a != first {
				checkDuplicatePage(t, "copy with cookie "+cookie+" after "+first.name+" accepted it",
					formRequest(c, a, http.MethodPost, "/submit", chromeAccept, cookie, "", ""), win)
			}
		}
	}
	for _, a := range apps {
		a.stop(t, syscall.SIGTERM)
	}
}
