package throttle_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/faultproxy"
	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// fault is one way for Redis to fail, produced for real: on the network
// between the client and a real redis-server (a fault proxy), or on the
// server process itself.
type fault struct {
	name string
	// retried: go-redis retries a command after a connection error, and
	// the retry finds the key held by the request's own token, so the
	// request is rightly granted (store.Store's retry rule).
	retried bool
	on      func(t *testing.T, srv *redistest.Server, p *faultproxy.Proxy)
	off     func(t *testing.T, srv *redistest.Server, p *faultproxy.Proxy)
}

func clearProxy(_ *testing.T, _ *redistest.Server, p *faultproxy.Proxy) { p.Clear() }

var faults = []fault{
	{"black-hole", false, func(_ *testing.T, _ *redistest.Server, p *faultproxy.Proxy) { p.SetBlackHole(true) }, clearProxy},
	{"replies-dropped", false, func(_ *testing.T, _ *redistest.Server, p *faultproxy.Proxy) { p.SetDropReplies(true) }, clearProxy},
	{"slower-than-timeout", false, func(_ *testing.T, _ *redistest.Server, p *faultproxy.Proxy) {
		p.SetLatency(100*time.Millisecond, 100*time.Millisecond)
	}, clearProxy},
	{"reset-after-command", true, func(_ *testing.T, _ *redistest.Server, p *faultproxy.Proxy) { p.ResetOnNextReply() }, clearProxy},
	{"refused", false, func(_ *testing.T, _ *redistest.Server, p *faultproxy.Proxy) {
		p.SetRefuse(true)
		p.ResetAll()
	}, clearProxy},
	{"paused", false, func(t *testing.T, s *redistest.Server, _ *faultproxy.Proxy) { s.Pause(t) },
		func(t *testing.T, s *redistest.Server, _ *faultproxy.Proxy) { s.Resume(t) }},
	{"killed", false, func(t *testing.T, s *redistest.Server, _ *faultproxy.Proxy) { s.Kill(t) },
		func(t *testing.T, s *redistest.Server, _ *faultproxy.Proxy) { s.Restart(t) }},
}

// TestStoreFaults produces each fault against a real Redis, for each
// store-error mode (WhenStoreFails) and lock mode, and asserts the promise:
//
//   - the decision is the config's: through unguarded (open), 503 (closed),
//     or a lock in the fallback (over);
//   - it is bounded: the request is decided within the store timeout, not
//     the client's timeouts, set to 30 s here so that a decision that waited
//     for them shows (checked only as a hang detector, with room for a
//     loaded machine);
//   - no two leases hold one key: under FailOver a key held before the
//     fault stays held, and the fallback turns a second request away;
//   - no lock is left that nobody owns: once the fault is gone, the key of
//     the failed request is free in Redis, whatever the fault did with the
//     command;
//   - the store is used again once it recovers.
func TestStoreFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("needs redis-server")
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			proxy := faultproxy.Start(t, srv.Addr)
			client := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ContextTimeoutEnabled: true,
				DialTimeout: 30 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second})
			t.Cleanup(func() { _ = client.Close() })
			st := redisstore.New(client)
			t.Cleanup(func() { _ = st.Close() })
			direct := srv.Client(t)
			for _, fail := range []throttle.FailMode{throttle.FailOpen, throttle.FailClosed, throttle.FailOver} {
				for _, mode := range []throttle.Mode{throttle.Dedupe, throttle.Exclusive} {
					name := fmt.Sprintf("%s/%s", [...]string{"", "open", "closed", "over"}[fail], mode)
					t.Run(name, func(t *testing.T) {
						faultCase(t, f, srv, proxy, direct, st, fail, mode)
					})
				}
			}
		})
	}
}

func faultCase(t *testing.T, f fault, srv *redistest.Server, proxy *faultproxy.Proxy, direct *redis.Client,
	st store.Store, fail throttle.FailMode, mode throttle.Mode) {
	ctx := context.Background()
	c := throttle.LockConfig{Name: "fault-" + t.Name(), Mode: mode, TTL: 30 * time.Second,
		Options: throttle.Options{WhenStoreFails: fail, Timeout: 100 * time.Millisecond}}
	if fail == throttle.FailOver {
		c.Fallback = memstore.New()
	}
	l := newLock(t, st, c)

	// A key held before the fault, and a connection the client has used.
	held, err := l.Admit(ctx, "held")
	require.NoError(t, err, "before the fault")
	require.NotNil(t, held, "before the fault")
	defer held.Release(ctx)

	f.on(t, srv, proxy)
	faultOn := true
	defer func() {
		if faultOn {
			f.off(t, srv, proxy)
		}
	}()
	start := time.Now()
	lease, err := l.Admit(ctx, "u")
	assert.Less(t, time.Since(start), 20*time.Second, "the decision waited for the client's 30 s timeouts, not the store's 100 ms")
	switch {
	case f.retried:
		if assert.NoError(t, err, "a command retried after a reset: want the key granted to its own token") &&
			assert.NotNil(t, lease, "a command retried after a reset: want the key granted to its own token") {
			n, _ := direct.Exists(ctx, l.StoredKey("u")).Result()
			assert.Equal(t, int64(1), n, "the retried grant's key is not in Redis")
		}
		_, err := l.Admit(ctx, "u")
		assert.ErrorIs(t, err, throttle.ErrContended, "a second request for the granted key")
	case fail == throttle.FailOpen:
		assert.NoError(t, err, "FailOpen: want through unguarded (nil, nil)")
		assert.Nil(t, lease, "FailOpen: want through unguarded (nil, nil)")
	case fail == throttle.FailClosed:
		assert.ErrorIs(t, err, throttle.ErrStore, "FailClosed")
		assert.Nil(t, lease, "FailClosed")
	case fail == throttle.FailOver:
		assert.NoError(t, err, "FailOver: want a lease from the fallback")
		assert.NotNil(t, lease, "FailOver: want a lease from the fallback")
		_, err := l.Admit(ctx, "u")
		assert.ErrorIs(t, err, throttle.ErrContended, "FailOver: a second request for a key the fallback holds")
		_, err = l.Admit(ctx, "held")
		assert.ErrorIs(t, err, throttle.ErrContended, "FailOver: a request for a key held in Redis before the fault")
	}
	if lease != nil {
		assert.NoError(t, lease.Release(ctx), "releasing the lease taken during the fault")
	}

	f.off(t, srv, proxy)
	faultOn = false

	// No lock left that nobody owns: whatever happened to the command, the
	// failed request's key is free once Redis answers again.
	key := l.StoredKey("u")
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := direct.Exists(ctx, key).Result()
		if err == nil && n == 0 {
			break
		}
		if time.Now().After(deadline) {
			ttl, _ := direct.PTTL(ctx, key).Result()
			require.Failf(t, "lock left behind", "key %s is still held in Redis by nobody (%v left, %v)", key, ttl, err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// The store is used again: a new key is taken in Redis.
	for i := 0; ; i++ {
		id := fmt.Sprintf("after-%d", i)
		lease, err := l.Admit(ctx, id)
		if lease != nil && err == nil {
			n, _ := direct.Exists(ctx, l.StoredKey(id)).Result()
			_ = lease.Release(ctx)
			if n == 1 {
				break
			}
		}
		if time.Now().After(deadline) {
			require.Failf(t, "store not used again", "the store is not used again after the fault (last: %v %v)", lease, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
