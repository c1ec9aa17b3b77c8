package redisstore

import (
	"cmp"
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/internal/redisalgo"
)

// conn is the store's seam (redisalgo.Conn) on a go-redis client.
type conn struct{ c redis.UniversalClient }

// waitConn is a conn that can send WAIT after a script on its connection,
// which a Cluster client cannot: it would route the key-less WAIT anywhere.
type waitConn struct{ conn }

// evalCmd builds EVALSHA (or EVAL) of script on keys; a Cluster client
// routes it by its first key.
func evalCmd(ctx context.Context, name, script string, keys, args []string) *redis.Cmd {
	all := make([]any, 0, 3+len(keys)+len(args))
	all = append(all, name, script, len(keys))
	for _, k := range keys {
		all = append(all, k)
	}
	for _, a := range args {
		all = append(all, a)
	}
	cmd := redis.NewCmd(ctx, all...)
	cmd.SetFirstKeyPos(3)
	return cmd
}

func (a conn) Eval(ctx context.Context, s *redisalgo.Script, keys []string, args ...string) ([]int64, error) {
	cmd := evalCmd(ctx, "evalsha", s.SHA, keys, args)
	if _ = a.c.Process(ctx, cmd); noScript(cmd.Err()) {
		cmd = evalCmd(ctx, "eval", s.Src, keys, args)
		_ = a.c.Process(ctx, cmd)
	}
	return ints(cmd)
}

func (a waitConn) EvalWait(ctx context.Context, s *redisalgo.Script, replicas int, timeout time.Duration,
	keys []string, args ...string) ([]int64, int64, error, error) {
	send := func(name, script string) (*redis.Cmd, *redis.IntCmd) {
		cmd := evalCmd(ctx, name, script, keys, args)
		wait := redis.NewIntCmd(ctx, "wait", replicas, timeout.Milliseconds())
		p := a.c.Pipeline()
		_ = p.Process(ctx, cmd)
		_ = p.Process(ctx, wait)
		_, _ = p.Exec(ctx)
		return cmd, wait
	}
	cmd, wait := send("evalsha", s.SHA)
	if noScript(cmd.Err()) {
		cmd, wait = send("eval", s.Src)
	}
	res, err := ints(cmd)
	return res, wait.Val(), wait.Err(), err
}

// ints reads a script's integer or array of integers.
func ints(cmd *redis.Cmd) ([]int64, error) {
	v, err := cmd.Result()
	if err != nil {
		return nil, err
	}
	if n, ok := v.(int64); ok {
		return []int64{n}, nil
	}
	return cmd.Int64Slice()
}

func (a conn) SetNX(ctx context.Context, key, value string, ms int64, lookup bool) (bool, string, int64, error) {
	// A BoolCmd reads the nil reply of a refused SET NX as false, no error.
	set := redis.NewBoolCmd(ctx, "set", key, value, "px", ms, "nx")
	set.SetFirstKeyPos(1)
	if !lookup {
		_ = a.c.Process(ctx, set)
		return set.Val(), "", 0, set.Err()
	}
	get, pttl := redis.NewStringCmd(ctx, "get", key), redis.NewIntCmd(ctx, "pttl", key)
	p := a.c.Pipeline()
	_ = p.BatchProcess(ctx, set, get, pttl)
	_, _ = p.Exec(ctx)
	return set.Val(), get.Val(), pttl.Val(), cmp.Or(set.Err(), pttl.Err())
}

func (a conn) Get(ctx context.Context, key string) ([]byte, bool, error) {
	v, err := a.c.Get(ctx, key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	return v, err == nil, err
}

func (a conn) Policies(ctx context.Context) (map[string]string, error) {
	var mu sync.Mutex
	found := map[string]string{}
	get := func(ctx context.Context, c redis.Cmdable, addr string) error {
		m, err := c.ConfigGet(ctx, "maxmemory-policy").Result()
		if p, ok := m["maxmemory-policy"]; ok && err == nil {
			mu.Lock()
			found[addr] = p
			mu.Unlock()
		}
		return err
	}
	var err error
	if cc, ok := a.c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return get(ctx, c, c.Options().Addr) })
	} else {
		err = get(ctx, a.c, "")
	}
	mu.Lock()
	defer mu.Unlock()
	return found, err
}

func (a conn) Kind(err error) redisalgo.ErrKind {
	var nerr *net.OpError
	switch {
	case errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.ErrPoolTimeout) || errors.As(err, &nerr) && nerr.Op == "dial":
		return redisalgo.NotApplied
	case redis.HasErrorPrefix(err, "TRYAGAIN") || redis.HasErrorPrefix(err, "ASK "):
		return redisalgo.SlotMoving
	}
	return redisalgo.Other
}

func noScript(err error) bool { return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") }

// PubSub connects on its first read: Subscribe without channels sends nothing.
func (a conn) PubSub() redisalgo.PubSub { return pubSub{a.c.Subscribe(context.Background())} }

type pubSub struct{ *redis.PubSub }

func (p pubSub) Ping(ctx context.Context) error { return p.PubSub.Ping(ctx) }

func (p pubSub) Receive(ctx context.Context, d time.Duration) (string, bool, bool, error) {
	msg, err := p.ReceiveTimeout(ctx, d)
	var ne net.Error
	switch m := msg.(type) {
	case nil:
		if errors.As(err, &ne) && ne.Timeout() {
			return "", false, false, nil
		}
		return "", false, false, err
	case *redis.Subscription:
		return m.Channel, true, m.Kind == "subscribe", nil
	case *redis.Message:
		return m.Channel, false, true, nil
	}
	return "", false, false, nil
}
