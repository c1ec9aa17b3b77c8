//go:build !race

package redisstore_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
)

// TestAllocs pins the allocations of a Lock on the store, against a real
// server (the race detector changes the counts, hence the build tag): a
// Lock's own two (the key and token in one string, the lease) and go-redis's
// command (an acquisition as a bare SetNX makes it, 8); a release adds
// go-redis's EVALSHA and the key's record and channel names (one string).
// A caller whose context can be cancelled adds its acquisition's call and
// that call's Done channel (go-redis asks for it before it takes a
// connection); its release shares a call, seen through the lease.
func TestAllocs(t *testing.T) {
	s, _, _ := newStore(t)
	opts := throttle.Options{Timeout: time.Second}
	dedupe, err := throttle.NewLock(s, throttle.LockConfig{Name: "allocs", TTL: 10 * time.Second, Options: opts})
	require.NoError(t, err)
	exclusive, err := throttle.NewLock(s, throttle.LockConfig{Name: "allocs-x", Mode: throttle.Exclusive,
		TTL: 10 * time.Second, Options: opts})
	require.NoError(t, err)
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	run := strconv.FormatInt(time.Now().UnixNano(), 36) // new keys on every run (-count)
	ids := make([]string, 4100)
	for i := range ids {
		ids[i] = run + "-" + strconv.Itoa(i)
	}
	var failed error
	for _, id := range ids[4000:] { // the pool's connections are dialled now, not while measured
		_, failed = dedupe.Acquire(context.Background(), id)
		require.NoError(t, failed)
	}
	i := 0
	for _, c := range []struct {
		name string
		ctx  context.Context
		max  float64
		op   func(ctx context.Context, id string) error
	}{
		{"acquire", context.Background(), 10, acquire(dedupe)},
		{"acquire+release", context.Background(), 21, cycle(exclusive)},
		{"cancellable acquire", cancellable, 12, acquire(dedupe)},
		{"cancellable acquire+release", cancellable, 23, cycle(exclusive)},
	} {
		n := testing.AllocsPerRun(1000, func() {
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

// acquire returns a call of l.Acquire.
func acquire(l *throttle.Lock) func(ctx context.Context, id string) error {
	return func(ctx context.Context, id string) error { _, err := l.Acquire(ctx, id); return err }
}

// cycle returns a call of l.Acquire, then the lease's Release.
func cycle(l *throttle.Lock) func(ctx context.Context, id string) error {
	return func(ctx context.Context, id string) error {
		lease, err := l.Acquire(ctx, id)
		if err == nil {
			err = lease.Release(ctx)
		}
		return err
	}
}
