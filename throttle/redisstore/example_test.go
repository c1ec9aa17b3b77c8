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
	client := redis.NewClient(&redis.Options{Addr: exampleAddr(), ContextTimeoutEnabled: true})
	defer client.Close()
	store := redisstore.New(client)
	defer store.Close()

	l, err := throttle.NewLock(store, throttle.LockConfig{Name: "example-submit", TTL: 5 * time.Second})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
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
	client := redis.NewClient(&redis.Options{Addr: exampleAddr(), ContextTimeoutEnabled: true})
	defer client.Close()
	// Counters of keys nobody fenced for an hour are dropped.
	store := redisstore.New(client, redisstore.WithFenceTTL(time.Hour))
	defer store.Close()

	l, err := throttle.NewLock(store, throttle.LockConfig{Name: "example-sync", Mode: throttle.Exclusive, Fence: true})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
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
