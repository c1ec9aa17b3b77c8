package examples_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"go.uber.org/goleak"
)

// The bounds of the browser test: how long the browser may live (its start,
// and every scenario in it), and how long one scenario may take, from
// opening its tabs to reading their pages. Every wait is bounded by one of
// them; neither is asserted on.
const (
	browserLife     = 3 * time.Minute
	browserScenario = 30 * time.Second
)

// chromiumPath returns Debian's chromium: /usr/bin/chromium, or chromium on
// PATH. Without it the test is skipped, unless CI is set: CI must run it
// (.ci/run installs the package).
func chromiumPath(t *testing.T) string {
	t.Helper()
	if fi, err := os.Stat("/usr/bin/chromium"); err == nil && !fi.IsDir() {
		return "/usr/bin/chromium"
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	const msg = "chromium not found (/usr/bin/chromium, or on PATH): install Debian's chromium package (apt-get install chromium)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg + "; CI must run the browser test")
	}
	t.Skip(msg)
	return ""
}

// startBrowser starts a headless chromium with a fresh profile and returns
// the context of its first tab, from which scenarios open their own tabs.
// Cleanup stops the browser and waits for its process to exit.
func startBrowser(t *testing.T, exe string) context.Context {
	t.Helper()
	life, cancelLife := context.WithTimeout(context.Background(), browserLife)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(life,
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()), // removed after the cleanup below has stopped the browser
		chromedp.WindowSize(1000, 900),
	)
	browser, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancelBrowser() // closes the browser...
		cancelAlloc()   // ...and waits for its process to exit
		cancelLife()
	})
	// The first run starts the browser, for the life of the context.
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	return browser
}

// newTab opens a tab in browser, bounded by browserScenario. With
// newProfile the tab gets a browser context of its own (cookies included),
// like a new incognito window, so that it is a new user; otherwise it
// shares the browser context of browser (a tab of the same window). The
// tab is closed at cleanup.
func newTab(t *testing.T, browser context.Context, newProfile bool) context.Context {
	t.Helper()
	bounded, cancelBound := context.WithTimeout(browser, browserScenario)
	var opts []chromedp.ContextOption
	if newProfile {
		opts = append(opts, chromedp.WithNewBrowserContext())
	}
	tab, cancelTab := chromedp.NewContext(bounded, opts...)
	t.Cleanup(func() {
		cancelTab()
		cancelBound()
	})
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	return tab
}

// openForm loads the order form of a in tab and returns the centre of its
// submit button, in the viewport's coordinates.
func openForm(t *testing.T, tab context.Context, a *app) (x, y float64) {
	t.Helper()
	return openPage(t, tab, a, "/", "#submit")
}

// openPage loads path of a in tab, waits for the button selected by
// button, and returns its centre, in the viewport's coordinates.
func openPage(t *testing.T, tab context.Context, a *app, path, button string) (x, y float64) {
	t.Helper()
	if err := chromedp.Do(tab, chromedp.Navigate(a.url+path), chromedp.WaitVisible(chromedp.CSS(button))); err != nil {
		t.Fatalf("%s: loading %s: %v", a.name, path, err)
	}
	xy, err := chromedp.Run(tab, chromedp.Evaluate[[]float64](`((sel) => {
		const b = document.querySelector(sel);
		b.scrollIntoView({block: "center"});
		const r = b.getBoundingClientRect();
		return [r.left + r.width / 2, r.top + r.height / 2];
	})(`+strconv.Quote(button)+`)`))
	if err != nil || len(xy) != 2 {
		t.Fatalf("%s: locating %s on %s: %v %v", a.name, button, path, xy, err)
	}
	return xy[0], xy[1]
}

// userCookieIn returns the value of the user cookie tab holds for a.
func userCookieIn(t *testing.T, tab context.Context, a *app) network.Cookie {
	t.Helper()
	res, err := chromedp.Call(tab, network.GetCookies, network.GetCookiesParams{URLs: []string{a.url + "/"}})
	if err != nil {
		t.Fatalf("%s: reading the cookies: %v", a.name, err)
	}
	for _, c := range res.Cookies {
		if c.Name == userCookie {
			return *c
		}
	}
	t.Fatalf("%s: the browser holds no %s cookie after GET /", a.name, userCookie)
	return network.Cookie{}
}

// outcome is the result page a tab shows after a submission.
type outcome struct {
	status int    // the data-status of #result
	text   string // its visible text
}

// resultPage waits for tab to show a result page and returns it.
func resultPage(t *testing.T, tab context.Context, a *app, what string) outcome {
	t.Helper()
	if err := chromedp.Do(tab, chromedp.WaitVisible(chromedp.CSS("#result"))); err != nil {
		t.Fatalf("%s %s: no result page: %v", a.name, what, err)
	}
	v, err := chromedp.Run(tab, chromedp.Evaluate[[]string](
		`(() => { const r = document.querySelector("#result"); return [r.dataset.status, r.innerText]; })()`))
	if err != nil || len(v) != 2 {
		t.Fatalf("%s %s: reading the result page: %v %v", a.name, what, v, err)
	}
	status, err := strconv.Atoi(v[0])
	if err != nil {
		t.Fatalf("%s %s: data-status %q", a.name, what, v[0])
	}
	return outcome{status: status, text: v[1]}
}

// checkAlreadySubmitted requires the "already submitted" page, with a
// retry time within the window.
func checkAlreadySubmitted(t *testing.T, a *app, what string, o outcome, win time.Duration) {
	t.Helper()
	if o.status != http.StatusTooManyRequests || !strings.Contains(strings.ToLower(o.text), "already submitted") {
		t.Errorf("%s %s: the page says %d %q, want 429 and \"already submitted\"", a.name, what, o.status, o.text)
		return
	}
	m := retryIn.FindStringSubmatch(o.text)
	if m == nil {
		t.Errorf("%s %s: the page gives no retry time (\"try again in N s\"): %q", a.name, what, o.text)
		return
	}
	if n, _ := strconv.Atoi(m[1]); n < 1 || n > int(win/time.Second) {
		t.Errorf("%s %s: try again in %d s, want 1..%d", a.name, what, n, int(win/time.Second))
	}
}

// saveScreenshot saves a full-page screenshot of tab as dir/file and logs
// its path.
func saveScreenshot(t *testing.T, tab context.Context, dir, file string) {
	t.Helper()
	png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	if err != nil {
		t.Errorf("screenshot: %v", err)
		return
	}
	path := filepath.Join(dir, file)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Errorf("screenshot: %v", err)
		return
	}
	t.Logf("screenshot: %s", path)
}

// submitCounts returns how many requests the submit policy of a admitted
// and rejected so far, from GET /metrics.
func submitCounts(t *testing.T, c *http.Client, a *app) (admitted, rejected float64) {
	t.Helper()
	r, samples := scrape(t, c, a)
	if r.err != nil || r.status != http.StatusOK {
		t.Fatalf("%s GET /metrics: %d %v", a.name, r.status, r.err)
	}
	by, _ := requests(samples)
	return by["submit/admitted"], by["submit/rejected"]
}

// waitAdmitted polls a's metrics until the submit policy has admitted n
// requests, or ctx ends.
func waitAdmitted(ctx context.Context, t *testing.T, c *http.Client, a *app, n float64) error {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if admitted, _ := submitCounts(t, c, a); admitted >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// checkOneAccepted requires that the submit policy of a admitted exactly
// one more request since (admitted, rejected) and turned exactly one more
// away: both submissions reached the server, and one went through.
func checkOneAccepted(t *testing.T, c *http.Client, a *app, what string, admitted, rejected float64) {
	t.Helper()
	ad, rj := submitCounts(t, c, a)
	if ad-admitted != 1 || rj-rejected != 1 {
		t.Errorf("%s %s: the server admitted %v and rejected %v submissions, want 1 and 1", a.name, what, ad-admitted, rj-rejected)
	}
}

// TestBrowserDoubleSubmit drives a real headless Chromium against each
// example's order form (GET /): a double click on "Place order", then a
// submission from two tabs of one browser at once. Each time the server
// accepts exactly one submission (counted by its own metrics, not by
// timing), and the page the user ends up on for the other says "already
// submitted" with the time to wait; the test saves a screenshot of it.
func TestBrowserDoubleSubmit(t *testing.T) {
	skipUnlessProcesses(t)
	exe := chromiumPath(t)
	// Not parallel, so that no other test's goroutines come and go
	// meanwhile: once every cleanup has run (this one, registered first,
	// runs last), no goroutine of chromedp, of the HTTP client or of the
	// example processes' plumbing may be left.
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	const win = time.Minute // nothing expires during the test
	shots, err := os.MkdirTemp("", "throttle-browser-")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots go to %s (kept after the test)", shots)
	browser := startBrowser(t, exe)
	c := newClient(t)

	for _, name := range exampleNames {
		t.Run(name, func(t *testing.T) {
			a := startApp(t, name, "-window", win.String())
			t.Run("double click", func(t *testing.T) { browserDoubleClick(t, browser, c, a, shots, win) })
			t.Run("two tabs", func(t *testing.T) { browserTwoTabs(t, browser, c, a, shots, win) })
			a.stop(t, syscall.SIGTERM)
		})
	}
}

// browserDoubleClick double-clicks "Place order" as a user in a new
// browser profile, and requires one accepted submission and the "already
// submitted" page.
//
// A browser only sends the second submission of a double click if the
// first request has left by the time of the second click: one that comes
// sooner replaces the first submission before anything is sent. So the
// second click comes as soon as the server has the first submission in
// hand (its metrics count it), while the example is still placing the
// order (demo.SubmitWork): the second click of a double click on a busy
// site, which the browser sends, cancelling the first page load.
func browserDoubleClick(t *testing.T, browser context.Context, c *http.Client, a *app, shots string, win time.Duration) {
	tab := newTab(t, browser, true)
	x, y := openForm(t, tab, a)
	if ck := userCookieIn(t, tab, a); !ck.HTTPOnly || ck.SameSite != network.CookieSameSiteLax || ck.Path != "/" {
		t.Errorf("%s: user cookie %+v, want HttpOnly, SameSite=Lax, Path=/", a.name, ck)
	}
	admitted, rejected := submitCounts(t, c, a)

	if err := chromedp.Do(tab, chromedp.MouseClickXY(x, y)); err != nil {
		t.Fatalf("%s: first click: %v", a.name, err)
	}
	if err := waitAdmitted(tab, t, c, a, admitted+1); err != nil {
		t.Fatalf("%s: the first click's submission never reached the server: %v", a.name, err)
	}
	if err := chromedp.Do(tab, chromedp.MouseClickXY(x, y, chromedp.ClickCount(2))); err != nil {
		t.Fatalf("%s: second click: %v", a.name, err)
	}

	o := resultPage(t, tab, a, "after a double click")
	checkAlreadySubmitted(t, a, "after a double click", o, win)
	checkOneAccepted(t, c, a, "double click", admitted, rejected)
	saveScreenshot(t, tab, shots, a.name+"-double-click.png")
}

// browserTwoTabs opens the form in two tabs of one new browser profile
// (one cookie, so one user), submits both at once, and requires that one
// tab shows "accepted" and the other "already submitted".
func browserTwoTabs(t *testing.T, browser context.Context, c *http.Client, a *app, shots string, win time.Duration) {
	first := newTab(t, browser, true)
	second := newTab(t, first, false) // a tab of the same profile
	tabs := []context.Context{first, second}
	var xs, ys [2]float64
	for i, tab := range tabs {
		xs[i], ys[i] = openForm(t, tab, a)
	}
	if c0, c1 := userCookieIn(t, first, a), userCookieIn(t, second, a); c0.Value != c1.Value {
		t.Fatalf("%s: the two tabs hold different user cookies", a.name)
	}
	admitted, rejected := submitCounts(t, c, a)

	var wg sync.WaitGroup
	errs := make([]error, len(tabs))
	for i, tab := range tabs {
		wg.Go(func() { errs[i] = chromedp.Do(tab, chromedp.MouseClickXY(xs[i], ys[i])) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("%s: clicking in both tabs: %v", a.name, err)
	}

	var outcomes [2]outcome
	for i, tab := range tabs {
		outcomes[i] = resultPage(t, tab, a, fmt.Sprintf("in tab %d", i+1))
	}
	loser := -1
	for i, o := range outcomes {
		if o.status == http.StatusTooManyRequests {
			loser = i
		}
	}
	if loser < 0 {
		t.Fatalf("%s: neither tab shows \"already submitted\": %+v", a.name, outcomes)
	}
	winner := outcomes[1-loser]
	if winner.status != http.StatusOK || !strings.Contains(winner.text, "Order accepted") {
		t.Errorf("%s: the other tab shows %d %q, want the accepted page", a.name, winner.status, winner.text)
	}
	checkAlreadySubmitted(t, a, "in the tab that lost", outcomes[loser], win)
	checkOneAccepted(t, c, a, "two tabs", admitted, rejected)
	saveScreenshot(t, tabs[loser], shots, a.name+"-two-tabs.png")
}
