package rueidisstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/rueidisstore"
)

// A Lock on Redis through rueidis rejects a duplicate within the window,
// whichever process it reaches; concurrent admissions share round trips.
// (Compiled, not run: it needs a Redis at REDIS_ADDR, default
// 127.0.0.1:6379.)
func Example() {
	addr := os.Getenv("REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		fmt.Println("no Redis:", err)
		return
	}
	defer client.Close()
	st := rueidisstore.New(client)
	defer func() { _ = st.Close() }()

	l, err := throttle.NewLock(st, throttle.LockConfig{Name: "example-submit"})
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
	defer func() { _ = lease.Release(ctx) }()

	_, err = l.Acquire(ctx, id)
	fmt.Println("duplicate rejected:", errors.Is(err, throttle.ErrContended))
}
