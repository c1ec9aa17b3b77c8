package examples_test

import (
	"context"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"go.uber.org/goleak"
)

// orderCounts returns how many requests the orders policy of a admitted
// (handler runs: orders placed) and replayed so far, from GET /metrics.
func orderCounts(t *testing.T, c *http.Client, a *app) (admitted, replayed float64) {
	t.Helper()
	r, samples := scrape(t, c, a)
	if r.err != nil || r.status != http.StatusOK {
		t.Fatalf("%s GET /metrics: %d %v", a.name, r.status, r.err)
	}
	by, _ := requests(samples)
	return by["orders/admitted"], by["orders/replayed"]
}

// openCheckout loads GET /checkout in tab and returns the centre of its
// "Place order" button.
func openCheckout(t *testing.T, tab context.Context, a *app) (x, y float64) {
	t.Helper()
	return openPage(t, tab, a, "/checkout", "#place")
}

// orderPageID waits for tab to show an order page and returns its id.
func orderPageID(t *testing.T, tab context.Context, a *app, what string) string {
	t.Helper()
	if err := chromedp.Do(tab, chromedp.WaitVisible(chromedp.CSS("#order-id"))); err != nil {
		t.Fatalf("%s %s: no order page: %v", a.name, what, err)
	}
	id, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.querySelector("#order-id").innerText`))
	if err != nil || !orderID.MatchString(id) {
		t.Fatalf("%s %s: order id %q: %v", a.name, what, id, err)
	}
	return id
}

// clickOrder clicks "Place order" clicks times: the first click, then, once
// the server has its order in hand (its metrics count it), the others, as
// an impatient user does while the order is being placed. (A second click
// sent before the first request left would be merged into it by the
// browser, and no duplicate would reach the server.)
func clickOrder(t *testing.T, tab context.Context, c *http.Client, a *app, x, y float64, clicks int, placed float64) {
	t.Helper()
	if err := chromedp.Do(tab, chromedp.MouseClickXY(x, y)); err != nil {
		t.Fatalf("%s: first click: %v", a.name, err)
	}
	if err := pollUntil(tab, func() bool { n, _ := orderCounts(t, c, a); return n >= placed+1 }); err != nil {
		t.Fatalf("%s: the first click's order never reached the server: %v", a.name, err)
	}
	for i := 2; i <= clicks; i++ {
		if err := chromedp.Do(tab, chromedp.MouseClickXY(x, y, chromedp.ClickCount(i))); err != nil {
			t.Fatalf("%s: click %d: %v", a.name, i, err)
		}
	}
}

// pollUntil calls cond every few milliseconds until it returns true, or ctx
// ends.
func pollUntil(ctx context.Context, cond func() bool) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// TestBrowserCheckout drives a real headless Chromium against each
// example's GET /checkout: a double click and a triple click on "Place
// order" each place one order (the example's metrics count one admitted
// request, the others replayed) and end on that order's page; two separate
// checkouts place two orders. A screenshot of the order page is saved.
func TestBrowserCheckout(t *testing.T) {
	skipUnlessProcesses(t)
	exe := chromiumPath(t)
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	shots, err := os.MkdirTemp("", "throttle-checkout-")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots go to %s (kept after the test)", shots)
	browser := startBrowser(t, exe)
	c := newClient(t)

	for _, name := range exampleNames {
		t.Run(name, func(t *testing.T) {
			a := startApp(t, name)
			for _, clicks := range []int{2, 3} {
				tab := newTab(t, browser, true)
				x, y := openCheckout(t, tab, a)
				placed, replayed := orderCounts(t, c, a)
				clickOrder(t, tab, c, a, x, y, clicks, placed)
				id := orderPageID(t, tab, a, "after the clicks")
				p, r := orderCounts(t, c, a)
				if p-placed != 1 || r-replayed < 1 {
					t.Errorf("%s, %d clicks: %v orders placed and %v replayed, want 1 and at least 1", a.name, clicks, p-placed, r-replayed)
				}
				if got := get(c, a, "/orders/"+id, ""); got.status != http.StatusOK {
					t.Errorf("%s, %d clicks: the page's order %s is not the order placed: GET says %d", a.name, clicks, id, got.status)
				}
				if clicks == 2 {
					saveScreenshot(t, tab, shots, a.name+"-checkout.png")
				}
			}

			// Two checkouts, one click each: two orders.
			tab := newTab(t, browser, true)
			placed, _ := orderCounts(t, c, a)
			var ids [2]string
			for i := range ids {
				x, y := openCheckout(t, tab, a)
				if err := chromedp.Do(tab, chromedp.MouseClickXY(x, y)); err != nil {
					t.Fatalf("%s: checkout %d: %v", a.name, i+1, err)
				}
				ids[i] = orderPageID(t, tab, a, "after a checkout")
			}
			if p, _ := orderCounts(t, c, a); ids[0] == ids[1] || p-placed != 2 {
				t.Errorf("%s: two checkouts gave orders %v and placed %v, want two", a.name, ids, p-placed)
			}
			a.stop(t, syscall.SIGTERM)
		})
	}
}
