package examples_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-throttle/throttle/internal/redistest"
)

// The window the Redis test runs the examples with: long enough for a burst
// of requests to land inside it, short enough to wait for it to end.
const window = 3 * time.Second

// reply is what a test learned from one request.
type reply struct {
	app         *app
	status      int
	retryAfter  string
	policy      string // RateLimit-Policy
	rateLimit   string // RateLimit
	contentType string
	body        string
	start, end  time.Time
	err         error
}

func newClient(t *testing.T) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 15 * time.Second}
}

// submit posts to /submit as user (no X-User-ID header when user is "").
func submit(c *http.Client, a *app, user string) reply {
	req, err := http.NewRequest(http.MethodPost, a.url+"/submit", strings.NewReader(`{"order":1}`))
	if err != nil {
		return reply{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	if user != "" {
		req.Header.Set("X-User-ID", user)
	}
	r := do(c, req)
	r.app = a
	return r
}

func do(c *http.Client, req *http.Request) reply {
	r := reply{start: time.Now()}
	resp, err := c.Do(req)
	if err != nil {
		r.err, r.end = err, time.Now()
		return r
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	r.end = time.Now()
	r.status, r.body, r.err = resp.StatusCode, string(b), err
	r.retryAfter = resp.Header.Get("Retry-After")
	r.policy = resp.Header.Get("RateLimit-Policy")
	r.rateLimit = resp.Header.Get("RateLimit")
	r.contentType = resp.Header.Get("Content-Type")
	return r
}

func healthz(t *testing.T, c *http.Client, a *app) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, a.url+"/healthz", nil)
	if r := do(c, req); r.err != nil || r.status != http.StatusOK {
		t.Errorf("%s GET /healthz = %d %v, want 200", a.name, r.status, r.err)
	}
}

// checkAccepted requires a 2xx with the example's JSON body.
func checkAccepted(t *testing.T, a *app, what string, r reply) {
	t.Helper()
	if r.err != nil || r.status < 200 || r.status > 299 {
		t.Fatalf("%s %s: got %d %v %s, want 2xx", a.name, what, r.status, r.err, r.body)
	}
	var body struct{ Status string }
	if err := json.Unmarshal([]byte(r.body), &body); err != nil || body.Status != "accepted" {
		t.Errorf("%s %s: body %q is not the accepted JSON (%v)", a.name, what, r.body, err)
	}
}

// checkDuplicate requires the 429 of DESIGN section 3: Retry-After in whole
// seconds within the window, the RateLimit-Policy of the "submit" policy and
// a problem+json body that does not echo the user.
func checkDuplicate(t *testing.T, name, user string, r reply, win time.Duration) {
	t.Helper()
	if r.err != nil || r.status != http.StatusTooManyRequests {
		t.Errorf("%s duplicate for %q: got %d %v %s, want 429", name, user, r.status, r.err, r.body)
		return
	}
	secs, err := strconv.Atoi(r.retryAfter)
	if max := int((win + time.Second - 1) / time.Second); err != nil || secs < 1 || secs > max {
		t.Errorf("%s duplicate: Retry-After %q, want 1..%d", name, r.retryAfter, max)
	}
	if want := fmt.Sprintf(`"submit";q=1;w=%d`, int(win/time.Second)); r.policy != want {
		t.Errorf("%s duplicate: RateLimit-Policy %q, want %q", name, r.policy, want)
	}
	if !strings.HasPrefix(r.contentType, "application/problem+json") {
		t.Errorf("%s duplicate: Content-Type %q, want application/problem+json", name, r.contentType)
	}
	if user != "" && strings.Contains(r.body, user) {
		t.Errorf("%s duplicate: body %q shows the user id", name, r.body)
	}
}

// TestSharedRedis runs the four examples against one redis-server and sends
// each user's copies of a submission to all four at once: exactly one copy
// per user may go through, whichever framework serves it, which shows the
// four build the same key.
func TestSharedRedis(t *testing.T) {
	skipUnlessProcesses(t)
	srv := redistest.Start(t)
	// Failing closed: on a machine so loaded that a store call runs past
	// the policy's timeout, a copy is refused (503) rather than let
	// through, as failing open would by design; the test is about keys.
	args := []string{"-redis", srv.Addr, "-window", window.String(), "-fail", "closed"}
	apps := []*app{startApp(t, "nethttp", args...), startApp(t, "gin", args...), startApp(t, "echo", args...),
		startApp(t, "fiber", args...)}
	c := newClient(t)
	for _, a := range apps {
		healthz(t, c, a)
		req, _ := http.NewRequest(http.MethodGet, a.url+"/submit", nil)
		if r := do(c, req); r.err != nil || r.status != http.StatusMethodNotAllowed {
			t.Errorf("%s GET /submit = %d %v, want 405", a.name, r.status, r.err)
		}
	}

	const users, copies = 5, 30
	replies := make([][]reply, users)
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for u := range users {
		replies[u] = make([]reply, copies)
		for i := range copies {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-gate
				replies[u][i] = submit(c, apps[(u+i)%len(apps)], user(u))
			}()
		}
	}
	for _, a := range apps { // health checks during the burst
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			healthz(t, c, a)
		}()
	}
	close(gate)
	wg.Wait()

	for u := range users {
		checkOneWinner(t, apps, user(u), replies[u])
	}
	for _, a := range apps {
		healthz(t, c, a)
	}

	// Once the window is over the user may submit again. The bound is
	// generous: it only stops a test whose key never expires.
	deadline := time.Now().Add(window + 15*time.Second)
	for {
		r := submit(c, apps[1], user(0))
		if r.err == nil && r.status/100 == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("user %q still rejected (%d %v) long after the window", user(0), r.status, r.err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	for _, a := range apps {
		a.stop(t, syscall.SIGTERM)
	}
	for _, a := range apps {
		if out := a.output(); !strings.Contains(out, "Redis store") {
			t.Errorf("%s did not log that it uses the Redis store:\n%s", a.name, out)
		}
	}
}

func user(u int) string { return "user-" + strconv.Itoa(u) }

// checkOneWinner requires exactly one accepted copy of a user's submission
// and a 429 for every other copy, or a 503 from an app that logged a store
// error (failing closed, a copy whose store call ran late is refused).
//
// A key is taken at the earliest when the user's first copy is sent and held
// for the window, so among the copies that were answered before the first
// was sent plus the window at most one can win, however slow the machine.
// Copies answered later than that (which only a very busy machine produces)
// may win a second time and are only checked to be 2xx or 429.
func checkOneWinner(t *testing.T, apps []*app, user string, rs []reply) {
	t.Helper()
	first := rs[0].start
	for _, r := range rs {
		if r.start.Before(first) {
			first = r.start
		}
	}
	wins, late, unavailable := 0, 0, 0
	for _, r := range rs {
		a := r.app
		inWindow := r.end.Before(first.Add(window))
		if !inWindow {
			late++
		}
		switch {
		case r.err == nil && r.status/100 == 2:
			checkAccepted(t, a, "submit for "+user, r)
			if inWindow {
				wins++
			}
		case !inWindow && r.err == nil && r.status == http.StatusTooManyRequests:
		case r.err == nil && r.status == http.StatusServiceUnavailable && strings.Contains(a.output(), "store error"):
			// The app failed closed on a store error it logged.
			unavailable++
		default:
			checkDuplicate(t, a.name, user, r, window)
		}
	}
	if wins > 1 {
		t.Errorf("user %q: %d copies accepted within the window, want exactly 1%s", user, wins, storeErrorHint(apps))
	}
	if wins == 0 && late == 0 && unavailable == 0 {
		t.Errorf("user %q: no copy accepted, want exactly 1", user)
	}
	if unavailable > 0 {
		t.Logf("user %q: %d copies refused with 503 on store errors (busy machine)", user, unavailable)
	}
	if late > 0 {
		t.Logf("user %q: %d of %d copies answered after the window (busy machine); not counted", user, late, len(rs))
	}
}

// storeErrorHint says whether an example logged a store error: failing
// open, that lets a duplicate through by design (DESIGN section 3).
func storeErrorHint(apps []*app) string {
	for _, a := range apps {
		if strings.Contains(a.output(), "store error") {
			return " (" + a.name + " logged store errors: the machine may be overloaded)"
		}
	}
	return ""
}

// TestMemoryStore runs the net/http example without -redis, as a newcomer
// does first: a duplicate is turned away by the in-memory store, a user
// without X-User-ID is keyed by IP, and SIGINT ends it cleanly.
func TestMemoryStore(t *testing.T) {
	skipUnlessProcesses(t)
	const win = time.Minute // nothing expires during the test
	a := startApp(t, "nethttp", "-window", win.String())
	c := newClient(t)

	checkAccepted(t, a, "first submit", submit(c, a, "alice"))
	checkDuplicate(t, a.name, "alice", submit(c, a, "alice"), win)
	checkAccepted(t, a, "another user's submit", submit(c, a, "bob"))
	checkAccepted(t, a, "submit without X-User-ID", submit(c, a, ""))
	checkDuplicate(t, a.name, "", submit(c, a, ""), win)
	healthz(t, c, a)

	a.stop(t, os.Interrupt)
	if out := a.output(); !strings.Contains(out, "in-memory store") {
		t.Errorf("the example did not log that it uses the in-memory store:\n%s", out)
	}
}
