package throttle_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/internal/faultproxy"
	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/redisstore"
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
// store-error policy and mode, and asserts the promise:
//
//   - the decision is the policy's: through unguarded (open), 503 (closed),
//     or a lock in the fallback (over);
//   - it is bounded: the request is decided within the store timeout, not
//     the client's seconds-long defaults (checked only as a hang detector);
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
			client := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ContextTimeoutEnabled: true})
			t.Cleanup(func() { _ = client.Close() })
			st := redisstore.New(client)
			t.Cleanup(func() { _ = st.Close() })
			direct := srv.Client(t)
			for _, fail := range []throttle.FailMode{throttle.FailOpen, throttle.FailClosed, throttle.FailOver} {
				for _, mode := range []throttle.Mode{throttle.Dedupe, throttle.Exclusive} {
					name := fmt.Sprintf("%s/%s", fail, mode)
					t.Run(name, func(t *testing.T) {
						faultCase(t, f, srv, proxy, direct, st, fail, mode)
					})
				}
			}
		})
	}
}

func faultCase(t *testing.T, f fault, srv *redistest.Server, proxy *faultproxy.Proxy, direct *redis.Client,
	st throttle.Store, fail throttle.FailMode, mode throttle.Mode) {
	ctx := context.Background()
	p := throttle.Policy{Name: "fault-" + t.Name(), Mode: mode, Window: 30 * time.Second,
		LeaseTTL: 30 * time.Second, WhenStoreFails: fail, Timeout: 100 * time.Millisecond}
	if fail == throttle.FailOver {
		p.Fallback = memstore.New()
	}
	l := newLimiter(t, st, p)

	// A key held before the fault, and a connection the client has used.
	held, err := l.Admit(ctx, "held")
	if err != nil || held == nil {
		t.Fatalf("before the fault: %v %v", held, err)
	}
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
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the decision took %v with a 100ms store timeout", d)
	}
	switch {
	case f.retried:
		if lease == nil || err != nil {
			t.Errorf("a command retried after a reset = %v, %v; want the key granted to its own token", lease, err)
		} else if n, _ := direct.Exists(ctx, l.StoredKey("u")).Result(); n != 1 {
			t.Errorf("the retried grant's key is not in Redis")
		}
		if l2, err := l.Admit(ctx, "u"); !errors.Is(err, throttle.ErrContended) {
			t.Errorf("a second request for the granted key = %v, %v; want ErrContended", l2, err)
		}
	case fail == throttle.FailOpen:
		if lease != nil || err != nil {
			t.Errorf("FailOpen: Admit = %v, %v; want through unguarded (nil, nil)", lease, err)
		}
	case fail == throttle.FailClosed:
		if lease != nil || !errors.Is(err, throttle.ErrStore) {
			t.Errorf("FailClosed: Admit = %v, %v; want ErrStore", lease, err)
		}
	case fail == throttle.FailOver:
		if lease == nil || err != nil {
			t.Errorf("FailOver: Admit = %v, %v; want a lease from the fallback", lease, err)
		}
		if l2, err := l.Admit(ctx, "u"); !errors.Is(err, throttle.ErrContended) {
			t.Errorf("FailOver: a second request for a key the fallback holds = %v, %v; want ErrContended", l2, err)
		}
		if l2, err := l.Admit(ctx, "held"); !errors.Is(err, throttle.ErrContended) {
			t.Errorf("FailOver: a request for a key held in Redis before the fault = %v, %v; want ErrContended", l2, err)
		}
	}
	if lease != nil {
		if err := lease.Release(ctx); err != nil {
			t.Errorf("releasing the lease taken during the fault: %v", err)
		}
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
			t.Fatalf("key %s is still held in Redis by nobody (%v left, %v)", key, ttl, err)
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
			t.Fatalf("the store is not used again after the fault (last: %v %v)", lease, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
