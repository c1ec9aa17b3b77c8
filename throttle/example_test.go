package throttle_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/nethttp"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// The main use: a Dedupe policy in front of a form handler. The same user
// posting twice within the window is turned away with 429 and told when to
// retry. With redisstore.New(client) instead of memstore.New(), every
// process that shares the Redis turns the copy away.
func Example() {
	limiter, err := throttle.New(memstore.New(), throttle.Policy{Name: "submit"})
	if err != nil {
		panic(err)
	}
	key := keyfuncs.FirstOf(keyfuncs.Header("X-User-ID"), keyfuncs.RemoteIP())
	submit := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "order placed")
	})
	mux := http.NewServeMux()
	mux.Handle("POST /submit", nethttp.Middleware(limiter, key)(submit))

	for range 2 { // a double click
		req := httptest.NewRequest(http.MethodPost, "/submit", nil)
		req.Header.Set("X-User-ID", "42")
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if retry := rec.Header().Get("Retry-After"); retry != "" {
			fmt.Println(rec.Code, "retry after", retry, "s")
		} else {
			fmt.Print(rec.Code, " ", rec.Body.String())
		}
	}
	// Output:
	// 200 order placed
	// 429 retry after 5 s
}

// A Limiter takes a key per identity; the copy of a request finds it held
// and learns for how long.
func ExampleLimiter_Acquire() {
	ctx := context.Background()
	l, err := throttle.New(memstore.New(), throttle.Policy{Name: "submit", Window: 5 * time.Second})
	if err != nil {
		panic(err)
	}

	if _, err := l.Acquire(ctx, "user-42"); err == nil {
		fmt.Println("first submission accepted")
	}

	_, err = l.Acquire(ctx, "user-42")
	var held *throttle.ContendedError
	if errors.As(err, &held) {
		fmt.Println("duplicate rejected, retry within", held.RetryAfter.Round(time.Second))
	}
	// Output:
	// first submission accepted
	// duplicate rejected, retry within 5s
}

// Under FailOver, a Limiter keeps turning duplicates away from a local
// memory store while the shared one is down.
func ExamplePolicy_failOver() {
	p := throttle.Policy{
		Name:           "submit",
		WhenStoreFails: throttle.FailOver,
		Fallback:       memstore.New(),
	}
	l, err := throttle.New(brokenStore{}, p)
	if err != nil {
		panic(err)
	}
	_, err = l.Acquire(context.Background(), "user-42")
	fmt.Println("first admitted:", err == nil)
	_, err = l.Acquire(context.Background(), "user-42")
	fmt.Println("duplicate contended:", errors.Is(err, throttle.ErrContended))
	// Output:
	// first admitted: true
	// duplicate contended: true
}
