package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/go-throttle/throttle/internal/redisalgo"
)

// invalidations is the channel of CLIENT TRACKING's messages on RESP2.
const invalidations = "__redis__:invalidate"

// Track opens the near cache's tracking connection on a client of its own,
// made from the store's client's options (a Sentinel client's dialer finds
// the master): one RESP2 Pub/Sub connection, which turns tracking on with
// a redirect to itself on each connect. A Cluster or any client other than
// a *redis.Client gets none: its near cache is off.
func (a waitConn) Track(prefixes []string) redisalgo.Tracking {
	rc, ok := a.c.(*redis.Client)
	if !ok {
		return nil
	}
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
