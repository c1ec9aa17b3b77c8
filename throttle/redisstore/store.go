package redisstore

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/internal/redisalgo"
)

// Store implements store.Store, store.Notifier, store.Quota and
// store.Recorder, and Close, which stops its Pub/Sub connection;
// rueidisstore.New returns one too. Make one per client and share it.
type Store = redisalgo.Store

// New returns a Store on client, which it does not own (Dial makes a client
// as the store needs it, and owns it). It panics when client is nil or a
// *redis.Ring, whose clients each route a key by their own view of which
// shards are up, so that two processes could take one lock on two servers.
// It warns when client was made without ContextTimeoutEnabled: each call to
// a hung Redis then waits for the client's ReadTimeout (3 s by default), or
// longer, whatever the policy's Timeout.
func New(client redis.UniversalClient, opts ...Option) *Store {
	switch client.(type) {
	case nil:
		panic("redisstore: New needs a non-nil client")
	case *redis.Ring:
		panic("redisstore: a *redis.Ring cannot hold locks (its clients may disagree on a key's shard): " +
			"use a *redis.ClusterClient, a *redis.Client or a Sentinel failover client")
	}
	base := conn{client, redisalgo.NewDigests(), new(redisalgo.Millis), nil}
	var c redisalgo.Conn = waitConn{base}
	cc, cluster := client.(*redis.ClusterClient)
	if cluster {
		base.moved = new(movedHooks)
		c = base
	}
	if rc, ok := client.(*redis.Client); cluster && !cc.Options().ContextTimeoutEnabled ||
		ok && !rc.Options().ContextTimeoutEnabled {
		redisalgo.Logger(opts...).Warn("redisstore: the Redis client was made without ContextTimeoutEnabled: " +
			"store calls wait for its ReadTimeout instead of the policy's short Timeout")
	}
	s := redisalgo.New("redisstore", c, opts...)
	hookRefusals(s, client)
	if cluster {
		base.moved.hook(s, cc)
	}
	return s
}

// Option configures a Store made by New or by rueidisstore.New.
type Option = redisalgo.Option

// WithFenceTTL sets how long a key's fencing counter lives after its last
// fenced acquisition: 24 hours by default (d <= 0), at least a second. An
// expired counter restarts from the server clock, so fences still increase.
func WithFenceTTL(d time.Duration) Option { return redisalgo.WithFenceTTL(d) }

// WithLogger sets the logger of the store's warnings about the client's or
// the server's configuration; nil, the default, means slog.Default().
func WithLogger(l *slog.Logger) Option { return redisalgo.WithLogger(l) }

// WithReplicaAck narrows the window in which a failover loses a lock: an
// acquisition sends WAIT replicas timeout after the acquire script, in the
// same round trip, and reports a grant only once that many replicas have
// it; otherwise it releases the key and fails. A replica that did not
// acknowledge may still be promoted: fence where two holders would corrupt
// data. replicas <= 0 turns it off (the default); timeout <= 0 means 50ms.
// New panics on a Cluster client, which would send WAIT anywhere.
func WithReplicaAck(replicas int, timeout time.Duration) Option {
	return redisalgo.WithReplicaAck(replicas, timeout)
}

// WithNearCache bounds the near cache of refusals to entries (16,384 by
// default, a few MB at most); entries <= 0 turns it off. The cache
// remembers a refused key ("held until T", "quota spent until T") and
// answers the next copies in the process, without a round trip, until
// Redis reports that the key changed (CLIENT TRACKING, BCAST): it only
// ever refuses. It is on where the server accepts CLIENT TRACKING, with a
// go-redis client (standalone, Sentinel or Cluster, with a tracking
// connection to each master) or a rueidis client speaking RESP3
// (rueidisstore); off with WithReplicaAck. Store.NearCacheStats counts it.
// See docs/stores.md.
func WithNearCache(entries int) Option { return redisalgo.WithNearCache(entries) }

// conn is the store's seam (redisalgo.Conn) on a go-redis client; waitConn
// adds WAIT, which a Cluster client would send to an arbitrary node.
type (
	conn struct {
		c     redis.UniversalClient
		sha   *redisalgo.Digests
		ms    *redisalgo.Millis
		moved *movedHooks // a Cluster client's
	}
	waitConn struct{ conn }
)

// evalCmd builds EVALSHA with the digest sha (an interface value, see
// redisalgo.Digests.Arg), or EVAL of s when sha is nil, routed by its first
// key.
func evalCmd(ctx context.Context, s *redisalgo.Script, sha any, keys, args []string) *redis.Cmd {
	var name, body any = "evalsha", sha
	if sha == nil {
		name, body = "eval", s.Src
	}
	all := make([]any, 0, 3+len(keys)+len(args))
	all = append(all, name, body, len(keys))
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

// shaArg returns the digest sha of s as evalCmd takes it: nil (EVAL) when
// Redis refused SCRIPT LOAD.
func (a conn) shaArg(s *redisalgo.Script, sha string) any {
	if sha == "" {
		return nil
	}
	return a.sha.Arg(s)
}

// load sends SCRIPT LOAD to the master of key (a Cluster client's
// ScriptLoad would need every master up), returning the script's SHA1, or
// "" when Redis refused it (an ACL, a proxy): the call then sends EVAL.
func (a conn) load(ctx context.Context, key, src string) (string, error) {
	var c redis.Scripter = a.c
	if cc, ok := a.c.(*redis.ClusterClient); ok {
		m, err := cc.MasterForKey(ctx, key)
		if err != nil {
			return "", err
		}
		c = m
	}
	sha, err := c.ScriptLoad(ctx, src).Result()
	if re := redis.Error(nil); errors.As(err, &re) {
		return "", nil
	}
	return sha, err
}

func (a conn) Eval(ctx context.Context, s *redisalgo.Script, keys []string, args ...string) ([]int64, error) {
	sha, err := a.sha.SHA(ctx, s, keys[0], a.load)
	if err != nil {
		return nil, err
	}
	cmd := evalCmd(ctx, s, a.shaArg(s, sha), keys, args)
	if _ = a.c.Process(ctx, cmd); noScript(cmd.Err()) {
		cmd = evalCmd(ctx, s, nil, keys, args)
		_ = a.c.Process(ctx, cmd)
	}
	return ints(cmd)
}

func (a waitConn) EvalWait(ctx context.Context, s *redisalgo.Script, replicas int, timeout time.Duration,
	keys []string, args ...string) ([]int64, int64, error, error) {
	sha, err := a.sha.SHA(ctx, s, keys[0], a.load)
	if err != nil {
		return nil, 0, nil, err
	}
	var cmd *redis.Cmd
	var wait *redis.IntCmd
	for _, sha := range []any{a.shaArg(s, sha), nil} { // EVAL after NOSCRIPT
		cmd = evalCmd(ctx, s, sha, keys, args)
		wait = redis.NewIntCmd(ctx, "wait", replicas, timeout.Milliseconds())
		p := a.c.Pipeline()
		_ = p.BatchProcess(ctx, cmd, wait)
		_, _ = p.Exec(ctx)
		if !noScript(cmd.Err()) {
			break
		}
	}
	res, err := ints(cmd)
	return res, wait.Val(), wait.Err(), err
}

// ints reads a script's integer or array of integers.
func ints(cmd *redis.Cmd) ([]int64, error) {
	if n, ok := cmd.Val().(int64); ok && cmd.Err() == nil {
		return redisalgo.One(n), nil
	}
	return cmd.Int64Slice()
}

func (a conn) SetNX(ctx context.Context, key, value string, ms int64, lookup bool) (bool, string, int64, error) {
	// A BoolCmd reads the nil reply of a refused SET NX as false, no error.
	set := redis.NewBoolCmd(ctx, "set", key, value, "px", a.ms.Arg(ms), "nx")
	set.SetFirstKeyPos(1)
	if lookup {
		return a.setLookup(ctx, set, key)
	}
	_ = a.c.Process(ctx, set)
	return set.Val(), "", 0, set.Err()
}

// setLookup sends set (SET NX PX) with GET and PTTL of key in one round
// trip.
func (a conn) setLookup(ctx context.Context, set *redis.BoolCmd, key string) (bool, string, int64, error) {
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

func (a conn) Policies(ctx context.Context) ([]string, error) {
	var mu sync.Mutex
	var found []string
	get := func(ctx context.Context, c redis.Cmdable, addr string) error {
		p, err := c.ConfigGet(ctx, "maxmemory-policy").Result()
		mu.Lock()
		defer mu.Unlock()
		if v, ok := p["maxmemory-policy"]; ok && err == nil {
			found = append(found, addr+v)
		}
		return err
	}
	var err error // set before found is read: their order in a return is unspecified
	if cc, ok := a.c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return get(ctx, c, c.Options().Addr+"=") })
	} else {
		err = get(ctx, a.c, "")
	}
	return found, err
}

func (a conn) Unsent(err error) bool {
	var nerr *net.OpError
	return errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.ErrPoolTimeout) || errors.As(err, &nerr) && nerr.Op == "dial"
}

func noScript(err error) bool { return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") }

// PubSub connects on its first read: Subscribe without channels sends nothing.
func (a conn) PubSub() redisalgo.PubSub { return pubSub{a.c.Subscribe(context.Background())} }

type pubSub struct{ *redis.PubSub }

func (p pubSub) Receive(ctx context.Context, d time.Duration) (string, bool, bool, error) {
	msg, err := p.ReceiveTimeout(ctx, d)
	var ne net.Error
	switch m := msg.(type) {
	case *redis.Subscription:
		return m.Channel, true, m.Kind == "subscribe", nil
	case *redis.Message:
		return m.Channel, false, true, nil
	case nil:
		if !errors.As(err, &ne) || !ne.Timeout() {
			return "", false, false, err
		}
	}
	return "", false, false, nil // idle, or a reply of no interest
}

func (p pubSub) Ping(ctx context.Context) error { return p.PubSub.Ping(ctx) }
