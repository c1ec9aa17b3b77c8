package examples_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/go-throttle/throttle/internal/redistest"
)

// orderReply is a reply to POST /orders with what a replay must repeat.
type orderReply struct {
	reply
	location string
	replayed bool
	id       string
}

// postOrder posts body (a JSON order) to /orders as user, with the
// Idempotency-Key key when it is not empty, and accept as Accept when set.
func postOrder(c *http.Client, a *app, user, key, body, accept string) orderReply {
	req, err := http.NewRequest(http.MethodPost, a.url+"/orders", strings.NewReader(body))
	if err != nil {
		return orderReply{reply: reply{err: err}}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-User-ID", user)
	if key != "" {
		req.Header.Set("Idempotency-Key", `"`+key+`"`)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	c2 := *c // redirects are the test's to follow
	c2.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c2.Do(req)
	if err != nil {
		return orderReply{reply: reply{app: a, err: err}}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	o := orderReply{
		reply: reply{app: a, status: resp.StatusCode, body: string(b), err: err,
			retryAfter: resp.Header.Get("Retry-After"), contentType: resp.Header.Get("Content-Type")},
		location: resp.Header.Get("Location"),
		replayed: resp.Header.Get("Idempotent-Replayed") == "true",
	}
	if o.status == http.StatusCreated {
		var ord struct{ ID string }
		if json.Unmarshal(b, &ord) == nil {
			o.id = ord.ID
		}
	}
	return o
}

var orderID = regexp.MustCompile(`^[0-9a-f]{16}$`)

// checkCreated checks a 201 answer to POST /orders: Location names the id
// of the JSON body.
func checkCreated(t *testing.T, what string, o orderReply) {
	t.Helper()
	if o.err != nil || o.status != http.StatusCreated || !orderID.MatchString(o.id) ||
		o.location != "/orders/"+o.id || o.contentType != "application/json" {
		t.Fatalf("%s: %d %v, Location %q, Content-Type %q, body %q; want 201 with an order", what,
			o.status, o.err, o.location, o.contentType, o.body)
	}
}

// TestOrders checks POST /orders, GET /orders/{id} and GET /checkout in
// each example on its memory store.
func TestOrders(t *testing.T) {
	skipUnlessProcesses(t)
	for _, name := range exampleNames {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := startApp(t, name)
			c := newClient(t)
			first := postOrder(c, a, "alice", "k1", `{"item":"pen","quantity":2}`, "")
			checkCreated(t, "first order", first)
			if first.replayed {
				t.Fatal("the first answer is marked replayed")
			}
			again := postOrder(c, a, "alice", "k1", `{"item":"pen","quantity":2}`, "")
			checkCreated(t, "repeat", again)
			if !again.replayed || again.id != first.id || again.body != first.body {
				t.Fatalf("repeat: replayed %v, order %s, want a replay of %s", again.replayed, again.id, first.id)
			}
			reused := postOrder(c, a, "alice", "k1", `{"item":"pen","quantity":3}`, "")
			checkProblem(t, "key reused for another body", reused.reply, http.StatusUnprocessableEntity)
			// A body too long to fingerprint cannot be compared with the
			// first: refused, never answered with the first's response.
			huge := postOrder(c, a, "alice", "k1", `{"item":"`+strings.Repeat("x", 1100<<10)+`"}`, "")
			checkProblem(t, "key reused for a 1.1 MB body", huge.reply, http.StatusRequestEntityTooLarge)
			other := postOrder(c, a, "bob", "k1", `{"item":"pen","quantity":2}`, "")
			checkCreated(t, "another user, same key", other)
			if other.id == first.id || other.replayed {
				t.Fatal("another user's request got alice's order")
			}
			// Without a key, the body is the key.
			nokey := postOrder(c, a, "alice", "", `{"item":"ink"}`, "")
			checkCreated(t, "keyless", nokey)
			if r := postOrder(c, a, "alice", "", `{"item":"ink"}`, ""); !r.replayed || r.id != nokey.id {
				t.Fatalf("keyless repeat: replayed %v, order %s, want %s", r.replayed, r.id, nokey.id)
			}
			bad := postOrder(c, a, "alice", "k9", `{"quantity":0}`, "")
			checkProblem(t, "quantity 0", bad.reply, http.StatusUnprocessableEntity)

			// A browser is sent to the order's page.
			html := postOrder(c, a, "carol", "k1", `{"item":"pad"}`, "text/html,*/*;q=0.8")
			if html.status != http.StatusSeeOther || !strings.HasPrefix(html.location, "/orders/") {
				t.Fatalf("browser: %d, Location %q; want 303 to the order", html.status, html.location)
			}
			page := get(c, a, html.location, "text/html")
			if page.status != http.StatusOK || !strings.Contains(page.body, strings.TrimPrefix(html.location, "/orders/")) {
				t.Fatalf("order page: %d %q", page.status, page.body)
			}
			js := get(c, a, "/orders/"+first.id, "")
			if js.status != http.StatusOK || !strings.Contains(js.body, `"id":"`+first.id+`"`) {
				t.Fatalf("GET /orders/%s: %d %q", first.id, js.status, js.body)
			}
			if r := get(c, a, "/orders/0000000000000000", ""); r.status != http.StatusNotFound {
				t.Fatalf("unknown order: %d", r.status)
			}

			// Each checkout page carries its own hidden field.
			p1, p2 := get(c, a, "/checkout", "text/html"), get(c, a, "/checkout", "text/html")
			f1, f2 := checkoutField.FindStringSubmatch(p1.body), checkoutField.FindStringSubmatch(p2.body)
			if p1.status != 200 || f1 == nil || f2 == nil || f1[1] == f2[1] {
				t.Fatalf("checkout pages: %d, fields %q and %q", p1.status, f1, f2)
			}
		})
	}
}

var checkoutField = regexp.MustCompile(`name="checkout" value="([0-9a-f]+)"`)

// get sends GET path with Accept accept (none when empty).
func get(c *http.Client, a *app, path, accept string) reply {
	req, _ := http.NewRequest(http.MethodGet, a.url+path, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	return do(c, req)
}

// TestOrdersSharedRedis: 50 identical POSTs with one Idempotency-Key, sent
// at once across the four examples on one Redis, place one order: 50
// answers 201 with its id, 49 of them replays, one admission in all the
// processes' metrics.
func TestOrdersSharedRedis(t *testing.T) {
	skipUnlessProcesses(t)
	srv := redistest.Start(t)
	args := []string{"-redis", srv.Addr}
	apps := []*app{startApp(t, "nethttp", args...), startApp(t, "gin", args...), startApp(t, "echo", args...),
		startApp(t, "fiber", args...)}
	c := newClient(t)
	const n = 50
	replies := make([]orderReply, n)
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-gate
			replies[i] = postOrder(c, apps[i%len(apps)], "dave", "checkout-42", `{"item":"lamp"}`, "")
		})
	}
	close(gate)
	wg.Wait()
	ids, replayed := map[string]int{}, 0
	for i, r := range replies {
		checkCreated(t, fmt.Sprintf("reply %d from %s", i, r.app.name), r)
		ids[r.id]++
		if r.replayed {
			replayed++
		}
	}
	admitted := 0.0
	for _, a := range apps {
		_, samples := scrape(t, c, a)
		by, _ := requests(samples)
		admitted += by["orders/admitted"]
	}
	if len(ids) != 1 || replayed != n-1 || admitted != 1 {
		t.Fatalf("orders %v, %d replayed, %v admitted; want one order, %d replayed, 1 admitted", ids, replayed, admitted, n-1)
	}
}
