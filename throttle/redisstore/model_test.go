package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"

	"github.com/stretchr/testify/require"
)

// TestDataModel checks what the store leaves in Redis, since other
// processes and operators read it: a plain lock is a string holding the
// token with a PX expiry; a reentrant lock is a hash of token to hold count
// (and ":fence") with an expiry; the fencing counter sits at FenceKey with
// the fence TTL.
func TestDataModel(t *testing.T) {
	s, _, c := newStore(t)
	ctx := context.Background()

	t.Run("plain", func(t *testing.T) {
		k, tok := key(t), storekit.NewToken()
		// A TTL long enough that no pause of a loaded machine expires the
		// key before it is read (roundUp's own test covers the rounding):
		// PX is 60001 ms, and PTTL at most that.
		mustAcquire(t, s, store.Request{Key: k, Token: tok, TTL: time.Minute + 500*time.Microsecond})
		if v, err := c.Get(ctx, k).Result(); err != nil || v != tok {
			t.Fatalf("GET = %q, %v; want the token", v, err)
		}
		if p, _ := c.PTTL(ctx, k).Result(); p <= 50*time.Second || p > time.Minute+time.Millisecond {
			t.Fatalf("PTTL = %v, want (50s, 60.001s]", p)
		}
		if n, _ := c.Exists(ctx, storekit.FenceKey(k)).Result(); n != 0 {
			t.Fatal("an unfenced acquisition created a fencing counter")
		}
	})

	t.Run("fenced", func(t *testing.T) {
		k, tok := key(t), storekit.NewToken()
		g := mustAcquire(t, s, store.Request{Key: k, Token: tok, TTL: time.Minute, Fence: true})
		v, err := c.Get(ctx, storekit.FenceKey(k)).Int64()
		require.NoError(t, err, "fence counter = %d, %v; grant said %d", v, err, g.Fence)
		require.EqualValues(t, g.Fence, v, "fence counter = %d, %v; grant said %d", v, err, g.Fence)
		p, _ := c.PTTL(ctx, storekit.FenceKey(k)).Result()
		if p < 23*time.Hour || p > 24*time.Hour {
			t.Fatalf("fence counter PTTL = %v, want about the 24h default", p)
		}
	})

	t.Run("reentrant", func(t *testing.T) {
		k, tok := key(t), storekit.NewToken()
		req := store.Request{Key: k, Token: tok, TTL: time.Minute, Reentrant: true, Fence: true}
		g1 := mustAcquire(t, s, req)
		g2 := mustAcquire(t, s, req)
		if g2.Holds != 2 || g2.Fence != g1.Fence {
			t.Fatalf("re-entry = %+v, want 2 holds and fence %d", g2, g1.Fence)
		}
		h, err := c.HGetAll(ctx, k).Result()
		if err != nil || h[tok] != "2" || len(h) != 2 {
			t.Fatalf("hash = %v, %v; want {%s: 2, :fence: …}", h, err, tok)
		}
		if p, _ := c.PTTL(ctx, k).Result(); p <= 0 {
			t.Fatalf("reentrant lock has PTTL %v", p)
		}
	})
}

// TestRemainingWithoutExpiry: a key that something else stored without an
// expiry is reported as held with Remaining -1, on every path.
func TestRemainingWithoutExpiry(t *testing.T) {
	_, srv, _ := newStore(t)
	ctx := context.Background()
	for _, path := range plainPaths {
		c := srv.Client(t)
		s := redisstore.New(c, redisstore.WithPath(path))
		t.Cleanup(func() { _ = s.Close() })
		k := key(t)
		require.NoError(t, c.Set(ctx, k, "foreign", 0).Err())
		g, err := s.Acquire(ctx, store.Request{Key: k, Token: storekit.NewToken(), TTL: time.Second})
		if err != nil || g.Acquired || g.Remaining != -1 {
			t.Fatalf("%s: grant %+v, %v; want held with Remaining -1", path, g, err)
		}
		g, err = s.Acquire(ctx, store.Request{Key: k, Token: storekit.NewToken(), TTL: time.Second, Reentrant: true})
		if err != nil || g.Acquired || g.Remaining != -1 {
			t.Fatalf("reentrant on a string: grant %+v, %v; want held with Remaining -1", g, err)
		}
	}
}

// TestFence checks the fencing counter's promises beyond the suite's: it is
// at least the server clock in microseconds, it strictly increases, and
// after the counter expired (simulated by deleting it) the next fence is
// still above every earlier one.
func TestFence(t *testing.T) {
	s, _, c := newStore(t)
	ctx := context.Background()
	k := key(t)
	var last int64
	for i := range 50 {
		tok := storekit.NewToken()
		before, err := c.Time(ctx).Result()
		require.NoError(t, err)
		g := mustAcquire(t, s, store.Request{Key: k, Token: tok, TTL: time.Minute, Fence: true})
		if g.Fence <= last {
			t.Fatalf("acquisition %d: fence %d after %d", i, g.Fence, last)
		}
		if g.Fence < before.UnixMicro() {
			t.Fatalf("fence %d below the server clock %d µs", g.Fence, before.UnixMicro())
		}
		last = g.Fence
		mustOutcome(t, store.OK)(s.Release(ctx, k, tok))
		if i%10 == 9 {
			// The counter expires after the fence TTL when idle.
			require.NoError(t, c.Del(ctx, storekit.FenceKey(k)).Err())
		}
	}
}

// TestFenceTTLOption: WithFenceTTL sets the counter's expiry, with the same
// bounds as memstore.WithFenceTTL (see memstore's TestFenceTTLOption).
func TestFenceTTLOption(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		opt         time.Duration
		least, most time.Duration
	}{
		{time.Minute, 50 * time.Second, time.Minute},
		{10 * time.Millisecond, 500 * time.Millisecond, time.Second}, // raised to 1s
		{0, 23 * time.Hour, 24 * time.Hour},                          // the default
		{-time.Second, 23 * time.Hour, 24 * time.Hour},
	} {
		s, _, client := newStore(t, withFenceTTL(c.opt))
		k := key(t)
		mustAcquire(t, s, store.Request{Key: k, Token: storekit.NewToken(), TTL: time.Second, Fence: true})
		if p, _ := client.PTTL(ctx, storekit.FenceKey(k)).Result(); p <= c.least || p > c.most {
			t.Errorf("WithFenceTTL(%v): fence counter PTTL = %v, want in (%v, %v]", c.opt, p, c.least, c.most)
		}
	}
}

// TestInvalid: bad arguments are errors matching store.ErrInvalid, sent
// nowhere.
func TestInvalid(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	bad := []store.Request{
		{Key: "", Token: "t", TTL: time.Second},
		{Key: "k", Token: "", TTL: time.Second},
		{Key: "k", Token: ":fence", TTL: time.Second, Reentrant: true},
		{Key: "k", Token: "t", TTL: 0},
		{Key: "k", Token: "t", TTL: -time.Second},
	}
	for _, req := range bad {
		if _, err := s.Acquire(ctx, req); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Acquire(%+v) = %v, want ErrInvalid", req, err)
		}
	}
	if _, err := s.Release(ctx, "", "t"); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Release with empty key = %v", err)
	}
	if _, err := s.Extend(ctx, "k", "t", 0); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Extend with zero ttl = %v", err)
	}
	if _, _, err := s.Watch(ctx, ""); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Watch with empty key = %v", err)
	}
}
