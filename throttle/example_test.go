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
