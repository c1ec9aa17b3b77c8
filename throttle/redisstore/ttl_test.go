package redisstore_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"

	"github.com/stretchr/testify/require"
)

// maxMs is the longest TTL in milliseconds that a time.Duration holds
// (about 292 years); every longer-than-that TTL is stored as this.
const maxMs = math.MaxInt64 / int64(time.Millisecond)

// pttl returns key's PTTL in milliseconds as Redis reports it.
func pttl(t *testing.T, c *redis.Client, key string) int64 {
	t.Helper()
	n, err := c.Do(context.Background(), "PTTL", key).Int64()
	require.NoError(t, err)
	return n
}

// aboutMax fails unless ms is maxMs less the few seconds a test can take.
func aboutMax(t *testing.T, what string, ms int64) {
	t.Helper()
	if ms > maxMs || ms < maxMs-60_000 {
		t.Fatalf("%s: PTTL %d ms, want about %d (292 years)", what, ms, maxMs)
	}
}

// TestExtremeTTL: TTLs up to math.MaxInt64 nanoseconds are held for (about)
// that long on every path: SET NX alone, the SET+GET+PTTL pipeline, the
// acquire script, a reentrant hash, Extend, and the fencing counter's TTL. Before the fix the
// rounding to whole milliseconds overflowed: acquisitions failed with
// "invalid expire time", and Extend and the fence counter got a negative
// PEXPIRE, which deletes the key while reporting success.
func TestExtremeTTL(t *testing.T) {
	huge := []time.Duration{
		math.MaxInt64,
		math.MaxInt64 - 1,
		time.Duration(maxMs)*time.Millisecond + 1, // rounding up would overflow
		time.Duration(maxMs) * time.Millisecond,
	}
	paths := []struct {
		name string
		path string // see redisstore.WithPath
		req  store.Request
	}{
		{"set", "set", store.Request{}},
		{"pipeline", "pipeline", store.Request{}},
		{"script", "script", store.Request{}},
		{"fenced", "store", store.Request{Fence: true}},
		{"reentrant", "store", store.Request{Reentrant: true}},
	}
	s, _, c := newStore(t, redisstore.WithFenceTTL(math.MaxInt64))
	ctx := context.Background()
	for _, p := range paths {
		s := redisstore.New(c, redisstore.WithFenceTTL(math.MaxInt64), redisstore.WithPath(p.path))
		t.Cleanup(func() { _ = s.Close() })
		for i, ttl := range huge {
			t.Run(fmt.Sprintf("%s/%d", p.name, i), func(t *testing.T) {
				req := p.req
				req.Key, req.Token, req.TTL = key(t), storekit.NewToken(), ttl
				g := mustAcquire(t, s, req)
				aboutMax(t, "acquired", pttl(t, c, req.Key))
				if req.Fence {
					if g.Fence <= 0 {
						t.Fatalf("no fence: %+v", g)
					}
					aboutMax(t, "fence counter", pttl(t, c, storekit.FenceKey(req.Key)))
				}

				// Somebody else is told the holder keeps it for ages.
				other := store.Request{Key: req.Key, Token: storekit.NewToken(), TTL: ttl, Reentrant: req.Reentrant}
				rej, err := s.Acquire(ctx, other)
				require.NoError(t, err, "second acquire: %+v, %v", rej, err)
				require.False(t, rej.Acquired, "second acquire: %+v, %v", rej, err)
				if rej.Remaining < time.Duration(maxMs-60_000)*time.Millisecond {
					t.Fatalf("Remaining %v, want about 292 years", rej.Remaining)
				}

				mustOutcome(t, store.OK)(s.Release(ctx, req.Key, req.Token))
				if n := c.Exists(ctx, req.Key).Val(); n != 0 {
					t.Fatal("key left after release")
				}

				// Extend a short hold to the longest TTL.
				req.Token, req.TTL = storekit.NewToken(), time.Minute
				mustAcquire(t, s, req)
				if ms := pttl(t, c, req.Key); ms <= 0 || ms > 60_000 {
					t.Fatalf("acquired for a minute: PTTL %d", ms)
				}
				mustOutcome(t, store.OK)(s.Extend(ctx, req.Key, req.Token, ttl))
				aboutMax(t, "extended", pttl(t, c, req.Key))
				mustOutcome(t, store.OK)(s.Release(ctx, req.Key, req.Token))
			})
		}
	}

	// A fence counter with the longest TTL keeps increasing.
	k := key(t)
	var last int64
	for range 3 {
		req := store.Request{Key: k, Token: storekit.NewToken(), TTL: math.MaxInt64, Fence: true}
		g := mustAcquire(t, s, req)
		if g.Fence <= last {
			t.Fatalf("fence %d after %d", g.Fence, last)
		}
		last = g.Fence
		mustOutcome(t, store.OK)(s.Release(ctx, k, req.Token))
	}
}

// TestRemainingBeyondDuration: a key that something other than throttle
// wrote with a PX longer than a time.Duration holds is reported as held for
// the longest Duration, not for a wrapped-around negative one.
func TestRemainingBeyondDuration(t *testing.T) {
	s, _, c := newStore(t, redisstore.WithPath("script"))
	ctx := context.Background()
	k := key(t)
	require.NoError(t, c.Do(ctx, "SET", k, "foreign", "PX", int64(1e15)).Err())
	g, err := s.Acquire(ctx, store.Request{Key: k, Token: storekit.NewToken(), TTL: time.Second})
	require.NoError(t, err, "acquire of a foreign key: %+v, %v", g, err)
	require.False(t, g.Acquired, "acquire of a foreign key: %+v, %v", g, err)
	require.EqualValues(t, time.Duration(maxMs)*time.Millisecond, g.Remaining, "Remaining %d, want %d", int64(g.Remaining), maxMs*int64(time.Millisecond))
}
