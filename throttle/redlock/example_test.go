package redlock_test

import (
	"context"
	"errors"
	"log"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redlock"
)

// A Redlock store over three independent Redis masters, used by a Lock
// like any store. (Not run: it needs the three servers.)
func ExampleNew() {
	var nodes []redis.UniversalClient
	for _, addr := range []string{"redis-a:6379", "redis-b:6379", "redis-c:6379"} {
		nodes = append(nodes, redis.NewClient(&redis.Options{
			Addr:                  addr,
			ContextTimeoutEnabled: true, // let the node timeout end a call
			DialerRetries:         1,    // report a node that is down at once
		}))
	}
	defer func() { // after the store, which does not own the clients
		for _, c := range nodes {
			_ = c.Close()
		}
	}()
	st, err := redlock.New(nodes)
	if err != nil {
		panic(err)
	}
	defer st.Close()

	// One job per customer at a time, across every process. No Fence and
	// no Reentrant: a Redlock store refuses both.
	jobs, err := throttle.NewLock(st, throttle.LockConfig{Name: "invoices", Mode: throttle.Exclusive})
	if err != nil {
		panic(err)
	}
	err = jobs.Do(context.Background(), "customer-42", func(ctx context.Context) error {
		// ... the work; ctx is cancelled if the lease is lost ...
		return nil
	})
	if errors.Is(err, throttle.ErrContended) {
		log.Print("another process is already invoicing customer 42")
	}
}
