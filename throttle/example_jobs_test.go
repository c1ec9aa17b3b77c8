package throttle_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// stock stands in for a database row that remembers the fencing token of its
// last write and refuses writes that carry an older one, as
//
//	UPDATE stock SET qty = $1, fence = $2 WHERE sku = $3 AND fence < $2
//
// does. The check has to live in the resource: only the resource sees the
// writes of every holder in the order they arrive.
type stock struct {
	mu    sync.Mutex
	qty   int
	fence int64
}

var errStale = errors.New("stale fence: the row was written under a newer lock")

func (s *stock) set(qty int, fence int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fence <= s.fence {
		return errStale
	}
	s.qty, s.fence = qty, fence
	return nil
}

// A holder can stall past its lease (a GC pause, a stopped VM) while another
// process takes the key; when it wakes up it still believes it holds the
// lock. Its fencing token is lower than the new holder's, so the row refuses
// its late write.
func ExampleLock_Do_fencing() {
	l, err := throttle.NewLock(memstore.New(), throttle.LockConfig{
		Name:  "stock",
		Mode:  throttle.Exclusive,
		TTL:   50 * time.Millisecond,
		Fence: true,
		Wait:  time.Second,
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	row := &stock{qty: 10}

	// Worker A takes the key, then stalls without refreshing its lease.
	a, err := l.Acquire(ctx, "sku-1")
	if err != nil {
		panic(err)
	}
	time.Sleep(100 * time.Millisecond)

	// Worker B gets the key once A's lease has run out, and writes with
	// its own fence, read from the lease Do hands it.
	err = l.Do(ctx, "sku-1", func(ctx context.Context) error {
		return row.set(9, throttle.LeaseFrom(ctx).Fence())
	})
	fmt.Println("B writes:", err)

	// A wakes up and writes with its old fence.
	fmt.Println("A writes:", row.set(8, a.Fence()))
	fmt.Println("A releases:", a.Release(ctx))
	fmt.Println("qty:", row.qty)
	// Output:
	// B writes: <nil>
	// A writes: stale fence: the row was written under a newer lock
	// A releases: throttle: lease not held
	// qty: 9
}

// With LockConfig.Wait, Do waits for a key that is held instead of failing at
// once; the memory store (like the Redis store) wakes the waiter as soon as
// the holder releases, so the hand-over does not wait for a retry.
func ExampleLock_Do_wait() {
	l, err := throttle.NewLock(memstore.New(), throttle.LockConfig{
		Name: "report",
		Mode: throttle.Exclusive,
		Wait: 10 * time.Second,
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	started := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = l.Do(ctx, "monthly", func(context.Context) error {
			fmt.Println("first: building the report")
			close(started)
			time.Sleep(50 * time.Millisecond)
			fmt.Println("first: done")
			return nil
		})
	})
	<-started
	err = l.Do(ctx, "monthly", func(context.Context) error {
		fmt.Println("second: has the key")
		return nil
	})
	wg.Wait()
	fmt.Println("second:", err)

	// Without Wait, a held key fails at once with a *ContendedError.
	try, _ := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "report", Mode: throttle.Exclusive})
	_ = try.Do(ctx, "monthly", func(ctx context.Context) error {
		var ce *throttle.ContendedError
		err := try.Do(context.Background(), "monthly", func(context.Context) error { return nil })
		fmt.Println("busy:", errors.As(err, &ce) && ce.RetryAfter > 0)
		return nil
	})
	// Output:
	// first: building the report
	// first: done
	// second: has the key
	// second: <nil>
	// busy: true
}

// Under a Reentrant lock the work's context carries its owner, so code it
// calls can take the same key again instead of blocking on itself. The key is
// freed when the outermost Do returns.
func ExampleLock_Do_reentrant() {
	l, err := throttle.NewLock(memstore.New(), throttle.LockConfig{
		Name:      "order",
		Mode:      throttle.Exclusive,
		Reentrant: true,
	})
	if err != nil {
		panic(err)
	}
	restoreStock := func(ctx context.Context, order string) error {
		return l.Do(ctx, order, func(ctx context.Context) error {
			fmt.Println("restore stock, holds:", throttle.LeaseFrom(ctx).Holds())
			return nil
		})
	}
	ctx := context.Background()
	err = l.Do(ctx, "order-42", func(ctx context.Context) error {
		fmt.Println("cancel order, holds:", throttle.LeaseFrom(ctx).Holds())
		return restoreStock(ctx, "order-42")
	})
	fmt.Println("done:", err)

	// A caller with another owner is turned away while the key is held.
	_ = l.Do(ctx, "order-42", func(ctx context.Context) error {
		err := l.Do(throttle.WithOwner(context.Background()), "order-42", func(context.Context) error { return nil })
		fmt.Println("other owner:", errors.Is(err, throttle.ErrContended))
		return nil
	})
	// Output:
	// cancel order, holds: 1
	// restore stock, holds: 2
	// done: <nil>
	// other owner: true
}
