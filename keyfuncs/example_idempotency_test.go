package keyfuncs_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/go-throttle/throttle/echoadapter"
	"github.com/go-throttle/throttle/ginadapter"
	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/nethttp"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
)

func ExampleIdempotencyKey() {
	key := keyfuncs.IdempotencyKey()
	for _, v := range []string{
		`"8e03978e-40d5-43e8-bc93-6894a57f9324"`, // RFC 9651 String, as the draft has it
		`8e03978e-40d5-43e8-bc93-6894a57f9324`,   // bare, as Stripe's clients send it
		`"order 7 \"retry\"";v=1`,                // escapes and a parameter
		`"k1", "k2"`,                             // a list: refused
		`"a\nb"`,                                 // \n is no RFC 9651 escape: refused
	} {
		r := httptest.NewRequest(http.MethodPost, "/orders", nil)
		r.Header.Set("Idempotency-Key", v)
		if k, err := key(r); err != nil {
			fmt.Println("refused:", err)
		} else {
			fmt.Println(k)
		}
	}

	_, err := key(httptest.NewRequest(http.MethodPost, "/orders", nil))
	fmt.Println(err, errors.Is(err, keyfuncs.ErrNoIdempotencyKey))
	// Output:
	// 8e03978e-40d5-43e8-bc93-6894a57f9324
	// 8e03978e-40d5-43e8-bc93-6894a57f9324
	// order 7 "retry"
	// refused: keyfuncs: header "Idempotency-Key": a list of keys; send exactly one
	// refused: keyfuncs: header "Idempotency-Key": malformed: only \" and \\ may be escaped in a quoted key
	// keyfuncs: header "Idempotency-Key": missing true
}

func ExampleIdempotent() {
	// The user comes from the authentication in front of the handler;
	// here a gateway sets X-User-ID.
	key := keyfuncs.Idempotent(keyfuncs.Header("X-User-ID"))

	// The key function runs inside the mux, where r.Pattern is set, as
	// nethttp.Middleware(limiter, key) does when it wraps each route's
	// handler. Here the handlers record the identity instead.
	ids := map[string]string{}
	bodiesIntact := true
	mux := http.NewServeMux()
	record := func(w http.ResponseWriter, r *http.Request) {
		id, err := key(r)
		if err != nil {
			fmt.Println(r.Header.Get("X-Test"), "refused:", err)
		}
		body, _ := io.ReadAll(r.Body) // the handler still gets the body
		bodiesIntact = bodiesIntact && string(body) == `{"n":1}`
		ids[r.Header.Get("X-Test")] = id
	}
	mux.HandleFunc("POST /orders", record)
	mux.HandleFunc("POST /refunds", record)

	send := func(name, path, user, idemKey string) {
		r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(`{"n":1}`))
		r.Header.Set("X-Test", name)
		r.Header.Set("X-User-ID", user)
		if idemKey != "" {
			r.Header.Set("Idempotency-Key", idemKey)
		}
		mux.ServeHTTP(httptest.NewRecorder(), r)
	}
	send("alice", "/orders", "alice", `"k-1"`)
	send("alice retry", "/orders", "alice", `k-1`) // bare, same key
	send("bob", "/orders", "bob", `"k-1"`)
	send("alice refund", "/refunds", "alice", `"k-1"`)
	send("alice no key", "/orders", "alice", "")
	send("alice no key again", "/orders", "alice", "")
	send("alice bad key", "/orders", "alice", `"k-1`)

	fmt.Println("a retry shares alice's lock:", ids["alice retry"] == ids["alice"])
	fmt.Println("bob's k-1 is not alice's:", ids["bob"] != ids["alice"])
	fmt.Println("another route, another lock:", ids["alice refund"] != ids["alice"])
	fmt.Println("no key: the same body is the same submission:", ids["alice no key"] == ids["alice no key again"])
	fmt.Println("handlers read every body:", bodiesIntact)
	// Output:
	// alice bad key refused: keyfuncs: header "Idempotency-Key": malformed: the quoted key has no closing double quote
	// a retry shares alice's lock: true
	// bob's k-1 is not alice's: true
	// another route, another lock: true
	// no key: the same body is the same submission: true
	// handlers read every body: true
}

// With the middleware: a retry under the same key within the window is
// turned away, while another user's request with the same key, or the
// same user's with a new key, goes through.
func ExampleIdempotent_middleware() {
	limiter, err := throttle.New(memstore.New(), throttle.Policy{Name: "orders"})
	if err != nil {
		panic(err)
	}
	key := keyfuncs.Idempotent(keyfuncs.Header("X-User-ID"))
	orders := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	})
	mux := http.NewServeMux()
	// Inside the mux, per route, so that the key sees r.Pattern.
	mux.Handle("POST /orders", nethttp.Middleware(limiter, key)(orders))

	for _, c := range []struct{ user, idemKey string }{
		{"alice", `"k-1"`},
		{"alice", `"k-1"`}, // a retry
		{"bob", `"k-1"`},   // the same key from somebody else
		{"alice", `"k-2"`},
		{"alice", `"k-3`}, // malformed
	} {
		r := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{"n":1}`))
		r.Header.Set("X-User-ID", c.user)
		r.Header.Set("Idempotency-Key", c.idemKey)
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, r)
		fmt.Println(c.user, c.idemKey, rec.Code)
	}
	// Output:
	// alice "k-1" 201
	// alice "k-1" 429
	// bob "k-1" 201
	// alice "k-2" 201
	// alice "k-3 400
}

// gin sets no r.Pattern, so the key is joined in gin's own key function
// type, with the route from c.FullPath. Not run: it only shows the wiring.
func ExampleIdempotent_gin() {
	key := keyfuncs.Join(
		ginadapter.Value("user"), // set by your authentication middleware
		ginadapter.Request(keyfuncs.Method()),
		ginadapter.FullPath(),
		ginadapter.Request(keyfuncs.IdempotencyKey(
			keyfuncs.IdempotencyFallback(keyfuncs.BodyHash(keyfuncs.DefaultIdempotencyBodyLimit)))),
	)
	_ = key // ginadapter.ContextMiddleware(limiter, key)
}

// echo sets no r.Pattern either. The route comes from c.Path. Not run.
func ExampleIdempotent_echo() {
	key := keyfuncs.Join(
		echoadapter.Value("user"),
		echoadapter.Request(keyfuncs.Method()),
		echoadapter.Path(),
		echoadapter.Request(keyfuncs.IdempotencyKey(keyfuncs.RequireIdempotencyKey())),
	)
	_ = key // echoadapter.ContextMiddleware(limiter, key)
}

func ExampleBodyFingerprint() {
	// Replay stores the first request's fingerprint with its response. A
	// later request with the same Idempotency-Key but another fingerprint
	// reused the key for a different payload, and gets 422.
	first := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{"amount":10}`))
	retry := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{"amount":10}`))
	reuse := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{"amount":99}`))

	a, _ := keyfuncs.BodyFingerprint(first, 64<<10)
	b, _ := keyfuncs.BodyFingerprint(retry, 64<<10)
	c, _ := keyfuncs.BodyFingerprint(reuse, 64<<10)
	body, _ := io.ReadAll(first.Body) // still there for the handler
	fmt.Println(a == b, a == c, len(a), string(body))

	_, err := keyfuncs.BodyFingerprint(httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{"amount":10}`)), 8)
	var ke *keyfuncs.Error
	fmt.Println(errors.As(err, &ke) && ke.HTTPStatus() == http.StatusRequestEntityTooLarge)
	// Output:
	// true false 43 {"amount":10}
	// true
}
