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
// server, for a caller on context.Background (the race detector changes
// the counts, hence the build tag): an acquisition makes the key and token
// (one string) and the lease, nothing in the watch of the call nor in the
// adapter (the TTL's text is cached); a release adds the script's keys and
// args (one array) and the key's record and channel names (one string).
func TestAllocs(t *testing.T) {
	s, _ := newStore(t)
	opts := throttle.Options{Timeout: time.Second}
	dedupe, err := throttle.NewLock(s, throttle.LockConfig{Name: "allocs", TTL: 10 * time.Second, Options: opts})
	require.NoError(t, err)
	exclusive, err := throttle.NewLock(s, throttle.LockConfig{Name: "allocs-x", Mode: throttle.Exclusive,
		TTL: 10 * time.Second, Options: opts})
	require.NoError(t, err)
	ctx := context.Background()
	run := strconv.FormatInt(time.Now().UnixNano(), 36) // new keys on every run (-count)
	ids := make([]string, 3003)
	for i := range ids {
		ids[i] = run + "-" + strconv.Itoa(i)
	}
	var failed error
	for _, id := range ids[2002:] { // rueidis dials each of its pipelines on first use: now, not while measured
		_, failed = dedupe.Acquire(ctx, id)
		require.NoError(t, failed)
	}
	for _, c := range []struct {
		name string
		max  float64
		op   func(id string) error
	}{
		{"acquire", 2, func(id string) error { _, err := dedupe.Acquire(ctx, id); return err }},
		{"acquire+release", 4, func(id string) error {
			lease, err := exclusive.Acquire(ctx, id)
			if err == nil {
				err = lease.Release(ctx)
			}
			return err
		}},
	} {
		i := 0
		n := testing.AllocsPerRun(1000, func() {
			if err := c.op(ids[i]); err != nil && failed == nil {
				failed = err
			}
			i++
		})
		require.NoError(t, failed, c.name)
		assert.LessOrEqual(t, n, c.max, "allocations per %s", c.name)
		t.Logf("%v allocations per %s", n, c.name)
	}
}
