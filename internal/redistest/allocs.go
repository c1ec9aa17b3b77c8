package redistest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

// LockAllocs are the most allocations a call of a Lock on a Redis store
// may make: Lock.Acquire of a new id (a Dedupe lock), and Lock.Acquire
// then Lease.Release (an Exclusive one), for a caller on
// context.Background and for one on a cancellable context.
type LockAllocs struct {
	Acquire, Cycle                       float64
	CancellableAcquire, CancellableCycle float64
}

// CheckLockAllocs fails the test when a Lock on st, against a real server,
// allocates more per call than max allows. The race detector changes the
// counts: callers build without it.
func CheckLockAllocs(t *testing.T, st store.Store, max LockAllocs) {
	t.Helper()
	opts := throttle.Options{Timeout: time.Second}
	dedupe, err := throttle.NewLock(st, throttle.LockConfig{Name: "allocs", TTL: 10 * time.Second, Options: opts})
	require.NoError(t, err)
	exclusive, err := throttle.NewLock(st, throttle.LockConfig{Name: "allocs-x", Mode: throttle.Exclusive,
		TTL: 10 * time.Second, Options: opts})
	require.NoError(t, err)
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	run := strconv.FormatInt(time.Now().UnixNano(), 36) // new keys on every run (-count)
	ids := make([]string, 5000)
	for i := range ids {
		ids[i] = run + "-" + strconv.Itoa(i)
	}
	var failed error
	acquire := func(ctx context.Context, id string) error { _, err := dedupe.Acquire(ctx, id); return err }
	cycle := func(ctx context.Context, id string) error {
		lease, err := exclusive.Acquire(ctx, id)
		if err == nil {
			err = lease.Release(ctx)
		}
		return err
	}
	// The clients dial their connections now, not while measured.
	for _, id := range ids[4000:4500] {
		require.NoError(t, acquire(context.Background(), id))
	}
	i := 0
	for _, c := range []struct {
		name string
		ctx  context.Context
		max  float64
		op   func(ctx context.Context, id string) error
	}{
		{"acquire", context.Background(), max.Acquire, acquire},
		{"acquire+release", context.Background(), max.Cycle, cycle},
		{"cancellable acquire", cancellable, max.CancellableAcquire, acquire},
		{"cancellable acquire+release", cancellable, max.CancellableCycle, cycle},
	} {
		n := testing.AllocsPerRun(900, func() {
			if err := c.op(c.ctx, ids[i]); err != nil && failed == nil {
				failed = err
			}
			i++
		})
		require.NoError(t, failed, c.name)
		assert.LessOrEqual(t, n, c.max, "allocations per %s", c.name)
		t.Logf("%v allocations per %s", n, c.name)
	}
}
