package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/redisstore"
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
			}
			require.ErrorIs(t, err, store.ErrInvalid)
			assert.Contains(t, err.Error(), c.says)
		})
	}
	s, err := redlock.New(cs)
	require.NoError(t, err, "New on three independent nodes")
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "second Close")
}

// TestNewOnStoresRefusesBadNodeSets: the rules of New, for stores.
func TestNewOnStoresRefusesBadNodeSets(t *testing.T) {
	ns := startNodes(t, 3, false)
	var sts []store.Store
	for _, c := range ns.clients(t) {
		st := redisstore.New(c)
		t.Cleanup(func() { _ = st.Close() })
		sts = append(sts, st)
	}
	for name, nodes := range map[string][]store.Store{
		"two":  sts[:2],
		"nil":  {sts[0], nil, sts[2]},
		"same": {sts[0], sts[1], sts[0]},
	} {
		_, err := redlock.NewOnStores(nodes)
		require.ErrorIs(t, err, store.ErrInvalid, name)
	}
	s, err := redlock.NewOnStores(sts)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	mustAcquire(t, sts[0], req(newKey(t), time.Minute)) // Close left the stores open
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
			err := s.Refuses(r)
			require.ErrorIs(t, err, store.ErrInvalid)
			assert.Contains(t, err.Error(), c.says)
			g, err := s.Acquire(context.Background(), r)
			require.ErrorIs(t, err, store.ErrInvalid)
			assert.False(t, g.Acquired)
			for i := range ns.srvs {
				assert.Empty(t, ns.holder(t, i, key), "a refused request took node %d", i)
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
			_, err := s.Acquire(context.Background(), r)
			require.ErrorIs(t, err, store.ErrInvalid)
		})
	}
	_, err := s.Release(context.Background(), "", "t")
	require.ErrorIs(t, err, store.ErrInvalid, "Release of an empty key")
	_, err = s.Extend(context.Background(), "k", "t", 0)
	require.ErrorIs(t, err, store.ErrInvalid, "Extend to 0")
	_, _, err = s.Watch(context.Background(), "")
	require.ErrorIs(t, err, store.ErrInvalid, "Watch of an empty key")
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
	assert.Positive(t, g.TTL)
	assert.LessOrEqual(t, g.TTL, ttl-storekit.Drift(ttl), "Grant.TTL is the validity")
	assert.Equal(t, store.Grant{Acquired: true, TTL: g.TTL, Holds: 1}, g)
	for i := range ns.srvs {
		pttl, err := ns.direct[i].PTTL(context.Background(), key).Result()
		require.NoError(t, err)
		assert.LessOrEqual(t, pttl, ttl, "node %d", i)
		if pttl > 0 {
			assert.GreaterOrEqual(t, pttl, g.TTL, "node %d keeps the key less than the validity", i)
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
	_, err := s.Acquire(ctx, r)
	require.ErrorIs(t, err, store.ErrNotApplied)
	require.ErrorIs(t, err, context.Canceled)
	_, err = s.Release(ctx, key, r.Token)
	require.ErrorIs(t, err, context.Canceled)
	_, err = s.Extend(ctx, key, r.Token, time.Minute)
	require.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, ns.holding(t, key, r.Token))
}
