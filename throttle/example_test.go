package throttle_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
)

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

// Key shows what a Limiter stores: the prefix, then the policy name and the
// identity inside a Redis Cluster hash tag, escaped so that no two
// identities meet.
func ExampleKey() {
	fmt.Println(throttle.Key("throttle", "submit", "42"))
	fmt.Println(throttle.Key("throttle", "submit", throttle.JoinID("42", "POST /orders")))
	// Output:
	// throttle:{submit:42}
	// throttle:{submit:42%3APOST%2520/orders}
}

// Under FailOver, a Limiter keeps turning duplicates away from a local
// memory store while the shared one is down.
func ExamplePolicy_failOver() {
	p := throttle.Policy{
		Name:         "submit",
		OnStoreError: throttle.FailOver,
		Fallback:     memstore.New(),
	}
	l, err := throttle.New(brokenStore{}, p)
	if err != nil {
		panic(err)
	}
	_, rej := l.Admit(context.Background(), "user-42")
	fmt.Println("first admitted:", rej == nil)
	_, rej = l.Admit(context.Background(), "user-42")
	fmt.Println("duplicate status:", rej.Status)
	// Output:
	// first admitted: true
	// duplicate status: 429
}
