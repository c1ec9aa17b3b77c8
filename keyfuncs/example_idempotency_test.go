package keyfuncs_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/go-throttle/throttle/keyfuncs"
)

func ExampleIdempotencyKey() {
	key := keyfuncs.IdempotencyKey(nil)
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
	fmt.Println(err)
	// Output:
	// 8e03978e-40d5-43e8-bc93-6894a57f9324
	// 8e03978e-40d5-43e8-bc93-6894a57f9324
	// order 7 "retry"
	// refused: keyfuncs: header "Idempotency-Key": a list of keys; send exactly one
	// refused: keyfuncs: header "Idempotency-Key": malformed: only \" and \\ may be escaped in a quoted key
	// keyfuncs: header "Idempotency-Key": missing
}

// The client's key scoped by user and route, and the body's hash for a
// request without one, for a Lock (a guard.Replay scopes its stored keys by
// method and route itself, so its key is Join(user, idem), alike in every
// adapter). gin and echo set no r.Pattern: there the same Join is built in
// the adapter's key function type, such as
// keyfuncs.Join(ginadapter.Value("user"), ginadapter.Request(keyfuncs.Method()),
// ginadapter.FullPath(), ginadapter.Request(idem)).
func ExampleIdempotencyKey_scoped() {
	idem := keyfuncs.IdempotencyKey(keyfuncs.BodyHash(1 << 20))
	key := keyfuncs.Join(keyfuncs.Header("X-User-ID"), keyfuncs.Method(), keyfuncs.Pattern(), idem)

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
