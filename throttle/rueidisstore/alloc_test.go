//go:build !race

package rueidisstore_test

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
// server (the race detector changes the counts, hence the build tag). For a
// caller on context.Background an acquisition makes the key and token (one
// string) and the lease, nothing in the watch of the call nor in the
// adapter (the TTL's text is cached); a release adds the key's record and
// channel names (one string). A caller whose context can be cancelled adds
// its acquisition's call (whose Done channel is made only for a client that
// waits on it: rueidis sending alone on an idle pipeline does not); its
// release shares a call, seen through the lease.
func TestAllocs(t *testing.T) {
	s, _ := newStore(t)
	opts := throttle.Options{Timeout: time.Second}
	dedupe, err := throttle.NewLock(s, throttle.LockConfig{Name: "allocs", TTL: 10 * time.Second, Options: opts})
	require.NoError(t, err)
	exclusive, err := throttle.NewLock(s, throttle.LockConfig{Name: "allocs-x", Mode: throttle.Exclusive,
		TTL: 10 * time.Second, Options: opts})
	require.NoError(t, err)
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	run := strconv.FormatInt(time.Now().UnixNano(), 36) // new keys on every run (-count)
	ids := make([]string, 5005)
	for i := range ids {
		ids[i] = run + "-" + strconv.Itoa(i)
	}
	var failed error
	for _, id := range ids[4004:] { // rueidis dials each of its pipelines on first use: now, not while measured
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
		{"acquire", context.Background(), 2, acquire(dedupe)},
		{"acquire+release", context.Background(), 3, cycle(exclusive)},
		{"cancellable acquire", cancellable, 3, acquire(dedupe)},
		{"cancellable acquire+release", cancellable, 4, cycle(exclusive)},
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
