package redisstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/redisstore"

	"github.com/stretchr/testify/require"

	"github.com/stretchr/testify/assert"
)

// mustPanic runs f and returns what it panicked with, failing the test when
// it did not panic.
func mustPanic(t *testing.T, f func()) (v any) {
	t.Helper()
	defer func() {
		if v = recover(); v == nil {
			t.Fatal("no panic")
		}
	}()
	f()
	return nil
}

// newRing returns a Ring over the servers at addrs, closed at the test's
// end. A shard counts as up while up(its address) is true and it answers
// PING; Ring's heartbeat asks every 10ms.
func newRing(t *testing.T, addrs [2]string, up func(addr string) bool) *redis.Ring {
	t.Helper()
	r := redis.NewRing(&redis.RingOptions{
		Addrs:                 map[string]string{"a": addrs[0], "b": addrs[1]},
		HeartbeatFrequency:    10 * time.Millisecond,
		ContextTimeoutEnabled: true,
		HeartbeatFn: func(ctx context.Context, c *redis.Client) bool {
			return up(c.Options().Addr) && c.Ping(ctx).Err() == nil
		},
	})
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// twoServers starts two redis-servers for a Ring.
func twoServers(t *testing.T) [2]string {
	t.Helper()
	return [2]string{redistest.Start(t).Addr, redistest.Start(t).Addr}
}

func always(string) bool { return true }

// TestRingRefused: New refuses a *redis.Ring with a panic that says why and
// what to use instead, before it starts anything; a nil client too.
func TestRingRefused(t *testing.T) {
	ring := newRing(t, twoServers(t), always)
	msg := fmt.Sprint(mustPanic(t, func() { redisstore.New(ring) }))
	for _, want := range []string{"redis.Ring", "ClusterClient"} {
		assert.True(t, strings.Contains(msg, want), "panic %q does not mention %s", msg, want)
	}
	noStoreGoroutines(t)

	msg = fmt.Sprint(mustPanic(t, func() { redisstore.New(nil) }))
	assert.True(t, strings.Contains(msg, "nil client"), "panic %q does not say the client is nil", msg)
}

// TestRingClientsDisagree shows why a Ring is refused: two Ring clients
// over the same two servers, one of which cannot reach a shard for a
// while (an asymmetric partition; the heartbeat is faked here), route one
// lock key to different servers, and both take the lock. No store logic
// can repair that: each Ring client picks its shards alone.
func TestRingClientsDisagree(t *testing.T) {
	ctx := context.Background()
	addrs := twoServers(t)
	healthy := newRing(t, addrs, always)
	// Find a lock key that the healthy client keeps on the first server.
	var k string
	direct := redis.NewClient(&redis.Options{Addr: addrs[0]})
	t.Cleanup(func() { _ = direct.Close() })
	for i := 0; k == "" && i < 1000; i++ {
		c := storekit.Key("ring", "split", fmt.Sprint(i))
		require.NoError(t, healthy.Set(ctx, c, "probe", time.Minute).Err())
		if direct.Exists(ctx, c).Val() == 1 {
			k = c
		}
		healthy.Del(ctx, c)
	}
	require.NotEqualValues(t, "", k, "the Ring put no key on the first server")

	partitioned := newRing(t, addrs, func(addr string) bool { return addr != addrs[0] })
	eventually(t, "the partitioned client drops the first shard", func() bool { return partitioned.Len() == 1 })

	first := healthy.SetNX(ctx, k, "token-1", time.Minute).Val()
	second := partitioned.SetNX(ctx, k, "token-2", time.Minute).Val()
	if !first || !second {
		t.Fatalf("SET NX on one key: %v and %v; the two Ring clients agreed after all", first, second)
	}
}
