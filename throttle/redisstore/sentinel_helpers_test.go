package redisstore_test

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// Helpers of the Sentinel and replica acknowledgement tests.

// failoverLimit bounds how long a test waits for the store to work again
// after a failover: generous, as the sentinels need about one to five
// seconds.
const failoverLimit = 30 * time.Second

// sentinelStore returns a store on a new failover client of d (both closed
// at the test's end) and the client.
func sentinelStore(t testing.TB, d *redistest.Sentinel, opts ...redisstore.Option) (*redisstore.Store, *redis.Client) {
	t.Helper()
	c := d.FailoverClient(t)
	s := redisstore.New(c, opts...)
	t.Cleanup(func() { _ = s.Close() })
	<-redisstore.ConfigChecked(s)
	return s, c
}

// acquireEventually repeats req until the store answers it, granted or
// not, and returns the answer and how long that took. It fails the test
// after failoverLimit. A failover client answers with errors until it has
// found the new master.
func acquireEventually(t testing.TB, s store.Store, req store.Request) (store.Grant, time.Duration) {
	t.Helper()
	start := time.Now()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		g, err := s.Acquire(ctx, req)
		cancel()
		if err == nil {
			return g, time.Since(start)
		}
		require.LessOrEqual(t, time.Since(start), failoverLimit, "the store did not answer within %v: %v", failoverLimit, err)
		time.Sleep(20 * time.Millisecond)
	}
}

// exists reports whether key is on srv, asking it directly.
func exists(t testing.TB, srv *redistest.Server, key string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := srv.Client(t).Exists(ctx, key).Result()
	require.NoError(t, err, "EXISTS %s on %s", key, srv.Addr)
	return n == 1
}

// admitter calls Lock.Admit with a fresh id in a loop, as a stream of
// requests would, and records how each call ended and how long the
// slowest one took.
type admitter struct {
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	leases  int           // admitted with a lease
	open    int           // admitted unguarded (failed open)
	errs    []error       // turned away: must stay empty under FailOpen
	slowest time.Duration // the longest Admit
}

func startAdmitter(l *throttle.Lock) *admitter {
	a := &admitter{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		for {
			select {
			case <-a.stop:
				return
			default:
			}
			start := time.Now()
			lease, err := l.Admit(context.Background(), storekit.NewToken())
			d := time.Since(start)
			a.mu.Lock()
			a.slowest = max(a.slowest, d)
			switch {
			case err != nil:
				a.errs = append(a.errs, err)
			case lease != nil:
				a.leases++
			default:
				a.open++
			}
			a.mu.Unlock()
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return a
}

// counts returns the leases and fail-open admissions so far.
func (a *admitter) counts() (leases, open int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.leases, a.open
}

// finish stops the loop and checks that every Admit answered, within
// bound, without turning a request away.
func (a *admitter) finish(t testing.TB, bound time.Duration) {
	t.Helper()
	close(a.stop)
	<-a.done
	a.mu.Lock()
	defer a.mu.Unlock()
	t.Logf("Admit: %d leases, %d failed open, %d errors, slowest %v", a.leases, a.open, len(a.errs), a.slowest)
	assert.Empty(t, a.errs, "a fail-open Lock turned requests away")
	assert.LessOrEqual(t, a.slowest, bound, "the slowest Admit")
}

// waitOrphansGone waits until no limiter goroutine is left releasing the
// keys of failed acquisitions (it ends once their TTL has passed), so that
// the package's leak check passes.
func waitOrphansGone(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if !strings.Contains(string(buf[:n]), "releaseOrphans") {
			return
		}
		require.False(t, time.Now().After(deadline), "a limiter still releases orphaned keys after 10s")
		time.Sleep(50 * time.Millisecond)
	}
}
