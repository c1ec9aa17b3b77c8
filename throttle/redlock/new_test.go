package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/throttle/redlock"
	"github.com/go-throttle/throttle/throttle/store"
)

func TestNewRefusesBadNodeSets(t *testing.T) {
	ns := startNodes(t, 3, false)
	cs := ns.clients(t)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": ns.srvs[0].Addr}})
	t.Cleanup(func() { _ = ring.Close() })
	sameAddr := redis.NewClient(&redis.Options{Addr: ns.srvs[0].Addr})
	t.Cleanup(func() { _ = sameAddr.Close() })
	cases := map[string]struct {
		nodes []redis.UniversalClient
		says  string
	}{
		"none":         {nil, "at least 3"},
		"one":          {cs[:1], "at least 3"},
		"two":          {cs[:2], "at least 3"},
		"nil":          {[]redis.UniversalClient{cs[0], nil, cs[2]}, "nil"},
		"ring":         {[]redis.UniversalClient{cs[0], cs[1], ring}, "Ring"},
		"same-client":  {[]redis.UniversalClient{cs[0], cs[1], cs[0]}, "same"},
		"same-address": {[]redis.UniversalClient{cs[0], cs[1], sameAddr}, "same"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := redlock.New(c.nodes)
			if err == nil {
				_ = s.Close()
				t.Fatal("New accepted the nodes")
			}
			if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("New: %v; want store.ErrInvalid saying %q", err, c.says)
			}
		})
	}
	s, err := redlock.New(cs)
	if err != nil {
		t.Fatalf("New on three independent nodes: %v", err)
	}
	if s.Quorum() != 2 {
		t.Fatalf("Quorum() = %d, want 2", s.Quorum())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestRefusesFenceAndReentrant: fenced and reentrant requests fail with
// store.ErrInvalid, say why, and touch no node.
func TestRefusesFenceAndReentrant(t *testing.T) {
	ns := startNodes(t, 3, false)
	s := ns.store(t)
	for name, c := range map[string]struct {
		mod  func(*store.Request)
		says string
	}{
		"fence":     {func(r *store.Request) { r.Fence = true }, "fencing tokens refused"},
		"reentrant": {func(r *store.Request) { r.Reentrant = true }, "reentrant requests refused"},
	} {
		t.Run(name, func(t *testing.T) {
			key := newKey(t)
			r := req(key, time.Minute)
			c.mod(&r)
			if err := s.Refuses(r); !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("Refuses = %v; want store.ErrInvalid saying %q", err, c.says)
			}
			g, err := s.Acquire(context.Background(), r)
			if !errors.Is(err, store.ErrInvalid) || g.Acquired {
				t.Fatalf("Acquire = %+v, %v; want store.ErrInvalid", g, err)
			}
			for i := range ns.srvs {
				if h := ns.holder(t, i, key); h != "" {
					t.Fatalf("a refused request took node %d", i)
				}
			}
		})
	}
	for name, r := range map[string]store.Request{
		"empty-key":   {Token: "t", TTL: time.Second},
		"empty-token": {Key: "k", TTL: time.Second},
		"zero-ttl":    {Key: "k", Token: "t"},
		"reserved":    {Key: "k", Token: ":fence", TTL: time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := s.Acquire(context.Background(), r); !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("Acquire(%+v) = %v, want store.ErrInvalid", r, err)
			}
		})
	}
	if _, err := s.Release(context.Background(), "", "t"); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("Release of an empty key: %v", err)
	}
	if _, err := s.Extend(context.Background(), "k", "t", 0); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("Extend to 0: %v", err)
	}
}

// TestGrantTTLIsValidity: a granted acquisition reports the lock's validity
// (TTL less the time taken and the drift allowance), and the nodes really
// keep the key for the whole TTL.
func TestGrantTTLIsValidity(t *testing.T) {
	ns := startNodes(t, 3, false)
	s := ns.store(t)
	const ttl = 10 * time.Second
	key := newKey(t)
	g := mustAcquire(t, s, req(key, ttl))
	if max := ttl - store.Drift(ttl); g.TTL <= 0 || g.TTL > max {
		t.Fatalf("Grant.TTL = %v, want the validity in (0, %v]", g.TTL, max)
	}
	if g.Holds != 1 || g.Fence != 0 || g.Remaining != 0 {
		t.Fatalf("grant = %+v", g)
	}
	for i := range ns.srvs {
		pttl, err := ns.direct[i].PTTL(context.Background(), key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if pttl > ttl || (pttl > 0 && pttl < g.TTL) {
			t.Fatalf("node %d keeps the key %v: outside [validity %v, TTL %v]", i, pttl, g.TTL, ttl)
		}
	}
}

// TestCancelledContextTakesNothing: a call with a context that has ended
// sends nothing and says so (store.ErrNotApplied).
func TestCancelledContextTakesNothing(t *testing.T) {
	ns := startNodes(t, 3, false)
	s := ns.store(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	key := newKey(t)
	r := req(key, time.Minute)
	if _, err := s.Acquire(ctx, r); !errors.Is(err, store.ErrNotApplied) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire = %v; want ErrNotApplied and context.Canceled", err)
	}
	if _, err := s.Release(ctx, key, r.Token); !errors.Is(err, context.Canceled) {
		t.Fatalf("Release = %v", err)
	}
	if _, err := s.Extend(ctx, key, r.Token, time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("Extend = %v", err)
	}
	if n := ns.holding(t, key, r.Token); n != 0 {
		t.Fatalf("%d nodes hold the key", n)
	}
}
