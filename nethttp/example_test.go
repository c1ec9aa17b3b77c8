package nethttp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/nethttp"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// A double submission within the lock's 5 s TTL is turned away with 429. Every
// answer says, in the RateLimit field, that the user has nothing left (r=0)
// for the next 5 seconds (t=5).
func Example() {
	lock, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "submit"})
	if err != nil {
		panic(err)
	}
	key := keyfuncs.FirstOf(keyfuncs.Header("X-User-ID"), keyfuncs.RemoteIP())
	submit := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintln(w, `{"ok":true}`)
	})

	mux := http.NewServeMux()
	mux.Handle("POST /submit", nethttp.Middleware(guard.Lock(lock), key)(submit))

	for range 2 {
		req := httptest.NewRequest(http.MethodPost, "/submit", nil)
		req.Header.Set("X-User-ID", "42")
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Header().Get("Content-Type"), rec.Header().Get("RateLimit"))
	}
	// Output:
	// 201 application/json "submit";r=0;t=5
	// 429 application/problem+json "submit";r=0;t=5
}

// An application with its own error format answers rejections itself.
func ExampleWithRejectHandler() {
	lock, _ := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "submit"})
	reject := func(w http.ResponseWriter, r *http.Request, rej *guard.Rejection) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rej.Status)
		fmt.Fprintf(w, `{"error":%q}`+"\n", rej.Reason)
	}
	h := nethttp.Middleware(guard.Lock(lock), keyfuncs.Header("X-User-ID"),
		nethttp.WithRejectHandler(reject))(http.NotFoundHandler())

	for _, user := range []string{"", "42"} {
		req := httptest.NewRequest(http.MethodPost, "/submit", nil)
		if user != "" {
			req.Header.Set("X-User-ID", user)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Print(rec.Code, " ", rec.Body.String())
	}
	// Output:
	// 400 {"error":"bad-key"}
	// 404 404 page not found
}
