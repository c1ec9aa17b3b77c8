package demo

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"html/template"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

// OrderWindow is how long POST /orders replays an order's answer to the
// requests that repeat it (the Replay's TTL): a double click, a
// retried POST, the same Idempotency-Key sent again.
const OrderWindow = 10 * time.Minute

// OrderWork is how long placing an order takes: long enough that a double
// click's second request arrives while the first is in flight, and waits
// for it.
const OrderWork = time.Second

// OrdersReplay returns the config of POST /orders's Replay: the repeats
// of an order get its answer again (marked Idempotent-Replayed: true) and
// the order is placed once. While Redis fails it does what -fail says; by
// default a Replay fails closed (503): an order must not be placed twice
// because the store is down.
func OrdersReplay(s Settings) throttle.ReplayConfig {
	return throttle.ReplayConfig{
		Name:    "orders",
		TTL:     OrderWindow,
		Options: s.Options(),
	}
}

// NewOrdersReplay returns the Replay of POST /orders: OrdersReplay on the
// store that keeps records (see Settings.Quotas: over Redlock, the first
// master).
func NewOrdersReplay(store store.Store, s Settings) (*throttle.Replay, error) {
	if s.Quotas != nil {
		store = s.Quotas
	}
	return throttle.NewReplay(store, OrdersReplay(s))
}

// OrderKey returns the key of POST /orders: the user, as user identifies
// them, then the request's Idempotency-Key when it has one, or else the
// hash of its body. The checkout form carries a field unique to each page
// load, so that two checkouts are two orders and a double click is one.
func OrderKey(user keyfuncs.Func) keyfuncs.Func {
	return keyfuncs.Join(user, OrderRequest)
}

// OrderRequest is the part of OrderKey after the user: the request's
// Idempotency-Key, or else the hash of its body.
var OrderRequest = keyfuncs.IdempotencyKey(keyfuncs.BodyHash(1 << 20))

// Order is a placed order, the JSON body of POST /orders (201) and of
// GET /orders/{id}.
type Order struct {
	ID       string    `json:"id"`
	Item     string    `json:"item"`
	Quantity int       `json:"quantity"`
	Server   string    `json:"server"`
	Created  time.Time `json:"created"`
}

// maxOrders bounds the orders an OrderBook keeps: the oldest go first.
const maxOrders = 10000

// OrderBook keeps the orders one example process placed, for
// GET /orders/{id}. It is safe for concurrent use.
type OrderBook struct {
	server string
	mu     sync.Mutex
	orders map[string]Order
	ids    []string // in the order they were placed, for eviction
}

// NewOrderBook returns an empty book for the example named server.
func NewOrderBook(server string) *OrderBook {
	return &OrderBook{server: server, orders: map[string]Order{}}
}

func (b *OrderBook) add(o Order) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.ids) >= maxOrders {
		delete(b.orders, b.ids[0])
		b.ids = b.ids[1:]
	}
	b.orders[o.ID] = o
	b.ids = append(b.ids, o.ID)
}

func (b *OrderBook) get(id string) (Order, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	o, ok := b.orders[id]
	return o, ok
}

// Place is the handler of POST /orders once the middleware admitted it:
// it reads the order (a form, as the checkout page posts it, or JSON
// {"item":...,"quantity":...}), works for OrderWork, and answers 201
// Created with Location /orders/{id} and the Order as JSON; a browser
// (Accept naming text/html) gets 303 See Other to the order's page instead.
// A quantity that is not a number from 1 to 99 gets 422, and the key is
// released: the user may correct it and send again. An order is placed even
// if its client goes away meanwhile (see the comment inside).
func (b *OrderBook) Place(w http.ResponseWriter, r *http.Request) {
	item, qty, err := readOrder(w, r)
	if err != nil {
		WriteProblem(w, http.StatusUnprocessableEntity, err.Error())
		return
	}
	// The work goes on when the client leaves: the browser abandons the
	// first request of a double click, and its order must still be placed,
	// once, for the second click to be answered with it.
	time.Sleep(OrderWork)
	o := Order{ID: newOrderID(), Item: item, Quantity: qty, Server: b.server, Created: time.Now().UTC()}
	b.add(o)
	loc := "/orders/" + o.ID
	w.Header().Set("Location", loc)
	if WantsHTML(r) {
		w.WriteHeader(http.StatusSeeOther)
		return
	}
	writeJSON(w, http.StatusCreated, o)
}

// Show is the handler of GET /orders/{id}: the order as JSON, or as a page
// for a browser; 404 for an order this process did not place (orders live
// in the process that placed them; replays of its answer may come from any
// process on the same Redis).
func (b *OrderBook) Show(w http.ResponseWriter, r *http.Request, id string) {
	o, ok := b.get(id)
	if !ok {
		if WantsHTML(r) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusNotFound)
			_ = orderPage.Execute(w, nil)
			return
		}
		WriteProblem(w, http.StatusNotFound, "No order with this id was placed on this server.")
		return
	}
	if WantsHTML(r) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = orderPage.Execute(w, o)
		return
	}
	writeJSON(w, http.StatusOK, o)
}

// Checkout is the handler of GET /checkout: an order form posting to
// /orders, with a hidden field unique to this page load. The field makes the
// body, and so the key, of this checkout's order its own: a double click
// sends the same body twice and is placed once; a second checkout is a
// second order.
func Checkout(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store") // a reload is a new checkout
	_ = checkoutPage.Execute(w, newOrderID())
}

// readOrder reads the item and quantity of a POST /orders body.
func readOrder(w http.ResponseWriter, r *http.Request) (string, int, error) {
	item, qty := "book", "1"
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	switch ct {
	case "application/json":
		var body struct {
			Item     string `json:"item"`
			Quantity *int   `json:"quantity"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			return "", 0, errOrder("The order is not valid JSON.")
		}
		if body.Item != "" {
			item = body.Item
		}
		if body.Quantity != nil {
			qty = strconv.Itoa(*body.Quantity)
		}
	case "application/x-www-form-urlencoded":
		if err := r.ParseForm(); err != nil {
			return "", 0, errOrder("The order form could not be read.")
		}
		if v := r.PostForm.Get("item"); v != "" {
			item = v
		}
		if v := r.PostForm.Get("quantity"); v != "" {
			qty = v
		}
	}
	n, err := strconv.Atoi(strings.TrimSpace(qty))
	if err != nil || n < 1 || n > 99 {
		return "", 0, errOrder("The quantity must be a whole number from 1 to 99.")
	}
	if len(item) > 100 {
		return "", 0, errOrder("The item name is too long.")
	}
	return item, n, nil
}

type errOrder string

func (e errOrder) Error() string { return string(e) }

// newOrderID returns 16 random hex digits: unique across the processes
// that share a Redis, so that one's order never takes another's id.
func newOrderID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// WantsHTML reports whether r comes from a browser: its Accept field names
// text/html (with a q above 0). Everything else (curl's */*,
// application/json, no Accept) gets JSON.
func WantsHTML(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			mt, params, _ := strings.Cut(part, ";")
			if !strings.EqualFold(strings.TrimSpace(mt), "text/html") {
				continue
			}
			for p := range strings.SplitSeq(params, ";") {
				if k, q, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(k, "q") {
					if f, err := strconv.ParseFloat(strings.TrimSpace(q), 64); err == nil && f <= 0 {
						return false
					}
				}
			}
			return true
		}
	}
	return false
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		WriteProblem(w, http.StatusInternalServerError, "The answer could not be encoded.")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

var checkoutPage = template.Must(template.New("checkout").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Checkout</title>
<style>body{font-family:sans-serif;max-width:36em;margin:2em auto}label{display:block;margin:.5em 0}</style>
</head><body>
<h1>Checkout</h1>
<p>Double-click "Place order" as impatient people do: the order is placed once, and every click
lands on its page. The form carries a hidden field unique to this page load, so reloading the page
starts a new order.</p>
<form method="post" action="/orders">
<input type="hidden" name="checkout" value="{{.}}">
<label>Item <input name="item" value="book"></label>
<label>Quantity <input name="quantity" type="number" min="1" max="99" value="1"></label>
<button id="place" type="submit">Place order</button>
</form>
</body></html>
`))

var orderPage = template.Must(template.New("order").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{if .}}Order {{.ID}}{{else}}No such order{{end}}</title>
<style>body{font-family:sans-serif;max-width:36em;margin:2em auto}</style>
</head><body>
{{if .}}<h1>Order placed</h1>
<p id="order">Order <strong id="order-id">{{.ID}}</strong>: {{.Quantity}} × {{.Item}}, placed by the {{.Server}} example at {{.Created.Format "15:04:05"}} UTC.</p>
{{else}}<h1>No such order</h1>
<p>No order with this id was placed on this server.</p>
{{end}}<p><a href="/checkout">New checkout</a></p>
</body></html>
`))
