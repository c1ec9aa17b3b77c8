package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// A single-instance service guards form submissions with an in-memory store:
// the second submission of user 42 within the window is turned away.
func Example() {
	limiter, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "submit", TTL: 5 * time.Second})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if _, err := limiter.Acquire(ctx, "user-42"); err == nil {
		fmt.Println("first submission: accepted")
	}
	var contended *throttle.ContendedError
	if _, err := limiter.Acquire(ctx, "user-42"); errors.As(err, &contended) {
		fmt.Println("second submission: rejected, retry after", contended.RetryAfter.Round(time.Second))
	}
	// Output:
	// first submission: accepted
	// second submission: rejected, retry after 5s
}

// Tests move a fake clock instead of sleeping.
func ExampleWithClock() {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := memstore.New(memstore.WithClock(func() time.Time { return now }))
	ctx := context.Background()
	req := store.Request{Key: "k", Token: "first", TTL: time.Minute}
	g, _ := ms.Acquire(ctx, req)
	fmt.Println("acquired:", g.Acquired)

	now = now.Add(time.Minute) // the lock expires
	req.Token = "second"
	g, _ = ms.Acquire(ctx, req)
	fmt.Println("acquired after a minute:", g.Acquired)
	// Output:
	// acquired: true
	// acquired after a minute: true
}

// A bounded store refuses new keys with an error matching store.ErrNotApplied instead of growing; the
// Limiter treats that as a store failure and the policy's WhenStoreFails
// decides.
func ExampleWithMaxKeys() {
	ms := memstore.New(memstore.WithMaxKeys(1))
	ctx := context.Background()
	_, err := ms.Acquire(ctx, store.Request{Key: "a", Token: "t", TTL: time.Minute})
	fmt.Println("first key:", err)
	_, err = ms.Acquire(ctx, store.Request{Key: "b", Token: "t", TTL: time.Minute})
	fmt.Println("second key full:", errors.Is(err, store.ErrNotApplied))
	// Output:
	// first key: <nil>
	// second key full: true
}
