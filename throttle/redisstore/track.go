package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/go-throttle/throttle/internal/redisalgo"
)

// invalidations is the channel of CLIENT TRACKING's messages on RESP2.
const invalidations = "__redis__:invalidate"

// Track opens the near cache's tracking connections, each on a client of
// its own made from the options of the store's client (a Sentinel client's
// dialer finds the master), or of a Cluster client's node client of each
// master: one RESP2 Pub/Sub connection, which turns tracking on with a
// redirect to itself on each connect. A client other than a *redis.Client
// or a *redis.ClusterClient cannot track.
func (a conn) Track(ctx context.Context, prefixes []string) (map[string]redisalgo.Tracking, error) {
	switch c := a.c.(type) {
	case *redis.Client:
		return map[string]redisalgo.Tracking{"": track(c, prefixes)}, nil
	case *redis.ClusterClient:
		ts := map[string]redisalgo.Tracking{}
		err := a.masters(ctx, func(addr string, m *redis.Client) { ts[addr] = track(m, prefixes) })
		return ts, err
	}
	return nil, fmt.Errorf("%w: a %T client", redisalgo.ErrNoTracking, a.c)
}

// Masters reads a Cluster's masters (CLUSTER SLOTS, which also refreshes
// the client's view).
func (a conn) Masters(ctx context.Context) ([]string, error) {
	if _, ok := a.c.(*redis.ClusterClient); !ok {
		return nil, nil
	}
	var addrs []string
	err := a.masters(ctx, func(addr string, _ *redis.Client) { addrs = append(addrs, addr) })
	slices.Sort(addrs)
	return addrs, err
}

// masters calls fn, one call at a time, with the address and the node
// client of each master of the Cluster client, read from the servers now.
func (a conn) masters(ctx context.Context, fn func(addr string, m *redis.Client)) error {
	var mu sync.Mutex
	h := a.moved
	hook := !h.hooked.Load()
	err := a.c.(*redis.ClusterClient).ForEachMaster(ctx, func(_ context.Context, m *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		if hook {
			m.AddHook(h)
		}
		fn(m.Options().Addr, m)
		return nil
	})
	if hook && err == nil {
		h.hooked.Store(true)
	}
	return err
}

// track returns a tracking connection on a client of its own made from rc's
// options.
func track(rc *redis.Client, prefixes []string) *tracking {
	opt := *rc.Options()
	user := opt.OnConnect
	opt.Protocol, opt.PoolSize, opt.MinIdleConns, opt.MaxIdleConns = 2, 1, 0, 0
	opt.ClientSideCache, opt.ClientSideCacheConfig = nil, nil
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	opt.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
		if user != nil {
			if err := user(ctx, cn); err != nil {
				return err
			}
		}
		id, err := cn.ClientID(ctx).Result()
		if err == nil {
			args := []any{"client", "tracking", "on", "redirect", id, "bcast"}
			for _, p := range prefixes {
				args = append(args, "prefix", p)
			}
			err = cn.Do(ctx, args...).Err()
		}
		if re := redis.Error(nil); errors.As(err, &re) {
			return fmt.Errorf("%w: %w", redisalgo.ErrNoTracking, err)
		}
		return err
	}
	return &tracking{c: redis.NewClient(&opt)}
}

type tracking struct {
	c  *redis.Client
	ps *redis.PubSub
}

func (t *tracking) Start(ctx context.Context) error {
	t.ps = t.c.Subscribe(ctx)
	if err := t.ps.Subscribe(ctx, invalidations); err != nil {
		return err
	}
	for {
		d := time.Second
		if dl, ok := ctx.Deadline(); ok {
			d = time.Until(dl)
		}
		msg, err := t.ps.ReceiveTimeout(ctx, max(d, time.Millisecond))
		if err != nil {
			return err
		}
		if s, ok := msg.(*redis.Subscription); ok && s.Channel == invalidations {
			return nil
		}
	}
}

// Receive reads one message; a FLUSHALL's (a nil payload, which go-redis
// cannot read) comes back as an error, and the store drops everything.
func (t *tracking) Receive(ctx context.Context, d time.Duration) ([]string, bool, error) {
	msg, err := t.ps.ReceiveTimeout(ctx, d)
	var ne interface{ Timeout() bool }
	switch m := msg.(type) {
	case *redis.Message:
		if m.PayloadSlice == nil {
			return []string{m.Payload}, true, nil
		}
		return m.PayloadSlice, true, nil
	case nil:
		if !errors.As(err, &ne) || !ne.Timeout() {
			return nil, false, err
		}
		return nil, false, nil
	}
	return nil, true, nil // a pong
}

func (t *tracking) Ping(ctx context.Context) error { return t.ps.Ping(ctx) }

func (t *tracking) Close() error {
	if t.ps != nil {
		_ = t.ps.Close()
	}
	return t.c.Close()
}

// movedHooks tell a Store's near cache of its Cluster client's topology
// changes: a node client made (OnNewNode) and a MOVED or ASK reply from a
// node. The masters' node clients made before New get the hook when the
// masters are first read.
type movedHooks struct {
	s      *Store
	hooked atomic.Bool
}

// hook starts telling s of topology changes that cc meets.
func (h *movedHooks) hook(s *Store, cc *redis.ClusterClient) {
	h.s = s
	cc.OnNewNode(func(n *redis.Client) {
		redisalgo.Moved(s)
		n.AddHook(h)
	})
}

func (*movedHooks) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *movedHooks) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if moved(cmd.Err()) {
			redisalgo.Moved(h.s)
		}
		return err
	}
}

func (h *movedHooks) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			if moved(cmd.Err()) {
				redisalgo.Moved(h.s)
				break
			}
		}
		return err
	}
}

// moved reports whether err is a MOVED or ASK redirection.
func moved(err error) bool {
	return err != nil && (strings.HasPrefix(err.Error(), "MOVED ") || strings.HasPrefix(err.Error(), "ASK "))
}
