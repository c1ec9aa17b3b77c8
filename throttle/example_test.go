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
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// The main use: a Dedupe lock in front of a form handler. The same user
// posting twice within the TTL is turned away with 429 and told when to
// retry. With redisstore.New(client) instead of memstore.New(), every
// process that shares the Redis turns the copy away.
func Example() {
	lock, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "submit"})
	if err != nil {
		panic(err)
	}
	key := keyfuncs.FirstOf(keyfuncs.Header("X-User-ID"), keyfuncs.RemoteIP())
	submit := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "order placed")
	})
	mux := http.NewServeMux()
	mux.Handle("POST /submit", nethttp.Middleware(guard.Lock(lock), key)(submit))

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

// A Lock takes a key per identity; the copy of a request finds it held and
// learns for how long.
func ExampleLock_Acquire() {
	ctx := context.Background()
	lock, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "submit", TTL: 5 * time.Second})
	if err != nil {
		panic(err)
	}

	if _, err := lock.Acquire(ctx, "user-42"); err == nil {
		fmt.Println("first submission accepted")
	}

	_, err = lock.Acquire(ctx, "user-42")
	var held *throttle.ContendedError
	if errors.As(err, &held) {
		fmt.Println("duplicate rejected, retry within", held.RetryAfter.Round(time.Second))
	}
	// Output:
	// first submission accepted
	// duplicate rejected, retry within 5s
}

// A Quota takes its Rate with each call, so that one Quota serves every
// plan: here a free user gets 2 requests an hour and a paying one 5.
func ExampleQuota_Allow() {
	ctx := context.Background()
	quota, err := throttle.NewQuota(memstore.New(), throttle.QuotaConfig{Name: "api"})
	if err != nil {
		panic(err)
	}
	free := throttle.Rate{Limit: 2, Window: time.Hour}
	paid := throttle.Rate{Limit: 5, Window: time.Hour}

	for i := range 3 {
		d, err := quota.Allow(ctx, "free-user", free, 1)
		if err != nil {
			panic(err)
		}
		fmt.Printf("free request %d: allowed %v, %d left\n", i+1, d.Allowed, d.Remaining)
	}
	d, err := quota.Allow(ctx, "paid-user", paid, 3) // a request that costs 3
	if err != nil {
		panic(err)
	}
	fmt.Printf("paid request of cost 3: allowed %v, %d left\n", d.Allowed, d.Remaining)
	// Output:
	// free request 1: allowed true, 1 left
	// free request 2: allowed true, 0 left
	// free request 3: allowed false, 0 left
	// paid request of cost 3: allowed true, 2 left
}

// A Replay answers a retried request with the first one's recorded answer
// instead of running it twice.
func ExampleReplay_Claim() {
	ctx := context.Background()
	replay, err := throttle.NewReplay(memstore.New(), throttle.ReplayConfig{Name: "order", TTL: time.Hour})
	if err != nil {
		panic(err)
	}
	place := func() string {
		lease, record, err := replay.Claim(ctx, "idempotency-key-1")
		switch {
		case err != nil:
			return "turned away: " + err.Error()
		case lease == nil:
			return "replayed: " + string(record)
		}
		// The first request runs, then records its answer for its copies.
		answer := "order 7 placed"
		if err := lease.Record(ctx, []byte(answer)); err != nil {
			return "not recorded: " + err.Error()
		}
		return answer
	}
	fmt.Println(place())
	fmt.Println(place()) // the client's retry
	// Output:
	// order 7 placed
	// replayed: order 7 placed
}

// Under FailOver, a Lock keeps turning duplicates away from a local memory
// store while the shared one is down.
func ExampleOptions_failOver() {
	lock, err := throttle.NewLock(brokenStore{}, throttle.LockConfig{
		Name: "submit",
		Options: throttle.Options{
			WhenStoreFails: throttle.FailOver,
			Fallback:       memstore.New(),
		},
	})
	if err != nil {
		panic(err)
	}
	_, err = lock.Acquire(context.Background(), "user-42")
	fmt.Println("first admitted:", err == nil)
	_, err = lock.Acquire(context.Background(), "user-42")
	fmt.Println("duplicate contended:", errors.Is(err, throttle.ErrContended))
	// Output:
	// first admitted: true
	// duplicate contended: true
}
