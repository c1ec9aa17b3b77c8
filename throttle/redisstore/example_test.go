package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redisstore"
)

// exampleAddr is the Redis the examples use; set REDIS_ADDR to run them
// against another one.
func exampleAddr() string {
	if a := os.Getenv("REDIS_ADDR"); a != "" {
		return a
	}
	return "127.0.0.1:6379"
}

// A Lock on Redis rejects a duplicate within the window, whichever
// process it reaches.
func Example() {
	ctx := context.Background()
	// Dial makes the client as the store needs it; Close closes both.
	store, err := redisstore.Dial(ctx, &redis.UniversalOptions{Addrs: []string{exampleAddr()}})
	if err != nil {
		fmt.Println("unavailable:", err)
		return
	}
	defer store.Close()

	l, err := throttle.NewLock(store, throttle.LockConfig{Name: "example-submit", TTL: 5 * time.Second})
	if err != nil {
		panic(err)
	}
	id := "user-" + strconv.Itoa(os.Getpid()) // stands for a user ID
	lease, err := l.Acquire(ctx, id)
	if err != nil {
		fmt.Println("unavailable:", errors.Is(err, throttle.ErrStore))
		return
	}
	defer lease.Release(ctx)

	_, err = l.Acquire(ctx, id)
	fmt.Println("duplicate rejected:", errors.Is(err, throttle.ErrContended))
}

// A fenced, exclusive job: the fencing token goes to the resource, which
// refuses writes with an older token.
func ExampleWithFenceTTL() {
	ctx := context.Background()
	// Counters of keys nobody fenced for an hour are dropped.
	store, err := redisstore.Dial(ctx, &redis.UniversalOptions{Addrs: []string{exampleAddr()}},
		redisstore.WithFenceTTL(time.Hour))
	if err != nil {
		fmt.Println("unavailable:", err)
		return
	}
	defer store.Close()

	l, err := throttle.NewLock(store, throttle.LockConfig{Name: "example-sync", Mode: throttle.Exclusive, Fence: true})
	if err != nil {
		panic(err)
	}
	first, err := l.Acquire(ctx, "customer-42")
	if err != nil {
		fmt.Println("unavailable:", err)
		return
	}
	_ = first.Release(ctx)
	second, err := l.Acquire(ctx, "customer-42")
	if err != nil {
		fmt.Println("unavailable:", err)
		return
	}
	defer second.Release(ctx)
	fmt.Println("later holder has a higher fence:", second.Fence() > first.Fence())
}
