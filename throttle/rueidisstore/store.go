package rueidisstore

import (
	"cmp"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-throttle/throttle/internal/redisalgo"
	"github.com/go-throttle/throttle/throttle/redisstore"
)

// New returns the store on client (one server, a Cluster or Sentinel), which
// it does not own, configured by redisstore's options (WithFenceTTL,
// WithLogger, WithNearCache; WithReplicaAck does not apply). It panics when
// client is nil.
func New(client rueidis.Client, opts ...redisstore.Option) *redisstore.Store {
	if client == nil {
		panic("rueidisstore: New needs a non-nil client")
	}
	return redisalgo.New("rueidisstore", conn{client, redisalgo.NewDigests(), new(redisalgo.Millis)}, opts...)
}

// conn is the store's seam (redisalgo.Conn) on a rueidis client.
type conn struct {
	c   rueidis.Client
	sha *redisalgo.Digests
	ms  *redisalgo.Millis
}

// load sends SCRIPT LOAD to the node of key, returning the script's SHA1,
// or "" when Redis refused it (an ACL, a proxy): the call then sends EVAL.
func (a conn) load(ctx context.Context, key, src string) (string, error) {
	sha, err := a.c.Do(ctx, a.c.B().ScriptLoad().Script(src).Build().SetSlot(key)).ToString()
	if _, refused := rueidis.IsRedisErr(err); refused {
		return "", nil
	}
	return sha, err
}

func (a conn) Eval(ctx context.Context, s *redisalgo.Script, keys []string, args ...string) ([]int64, error) {
	sha, err := a.sha.SHA(ctx, s, keys[0], a.load)
	if err != nil {
		return nil, err
	}
	n := int64(len(keys))
	var res rueidis.RedisResult
	eval := sha == ""
	for try := 0; try < 2; try++ {
		if !eval {
			res = a.c.Do(ctx, a.c.B().Evalsha().Sha1(sha).Numkeys(n).Key(keys...).Arg(args...).Build())
			re, ok := rueidis.IsRedisErr(res.Error())
			eval = ok && re.IsNoScript()
		}
		if eval {
			res = a.c.Do(ctx, a.c.B().Eval().Script(s.Src).Numkeys(n).Key(keys...).Arg(args...).Build())
		}
		if !broken(res.Error()) || ctx.Err() != nil {
			break
		}
	}
	if m, err := res.ToMessage(); err != nil || m.IsArray() {
		return res.AsIntSlice()
	}
	v, err := res.AsInt64()
	return redisalgo.One(v), err
}

// broken reports whether err is a connection that broke under the call.
// rueidis spreads calls over several pipelined connections
// (PipelineMultiplex), and after a Redis restart each one fails its next
// call once before it reconnects; go-redis retries such a call, and so does
// Eval, once. The lock scripts are safe to run again (an acquisition that
// finds the key held by its own token is granted; a release or an extension
// checks the token); a quota charge whose connection broke after Redis ran
// it counts twice, as under go-redis's retries.
func broken(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func (a conn) SetNX(ctx context.Context, key, value string, ms int64, lookup bool) (bool, string, int64, error) {
	set := a.c.B().Arbitrary("SET").Keys(key).Args(value, "NX", "PX", a.ms.Text(ms)).Build()
	if !lookup {
		err := a.c.Do(ctx, set).Error()
		if rueidis.IsRedisNil(err) {
			return false, "", 0, nil
		}
		return err == nil, "", 0, err
	}
	res := a.c.DoMulti(ctx, set, a.c.B().Get().Key(key).Build(), a.c.B().Pttl().Key(key).Build())
	err := res[0].Error()
	if err != nil && !rueidis.IsRedisNil(err) {
		return false, "", 0, err
	}
	holder, _ := res[1].ToString()
	pttl, perr := res[2].AsInt64()
	return err == nil, holder, pttl, perr
}

func (a conn) Get(ctx context.Context, key string) ([]byte, bool, error) {
	v, err := a.c.Do(ctx, a.c.B().Get().Key(key).Build()).AsBytes()
	if rueidis.IsRedisNil(err) {
		return nil, false, nil
	}
	return v, err == nil, err
}

func (a conn) Policies(ctx context.Context) ([]string, error) {
	var found []string
	var first error
	nodes := a.c.Nodes()
	for addr, n := range nodes {
		m, err := n.Do(ctx, n.B().ConfigGet().Parameter("maxmemory-policy").Build()).AsStrMap()
		if p, ok := m["maxmemory-policy"]; ok && err == nil {
			found = append(found, map[bool]string{true: addr + "="}[len(nodes) > 1]+p)
		}
		first = cmp.Or(first, err)
	}
	return found, first
}

func (a conn) Unsent(err error) bool {
	var nerr *net.OpError
	return errors.Is(err, rueidis.ErrClosing) || errors.As(err, &nerr) && nerr.Op == "dial"
}

// PubSub dedicates a connection of the client to Watch; rueidis hands its
// messages to hooks, which pass them on to Receive.
func (a conn) PubSub() redisalgo.PubSub {
	dc, cancel := a.c.Dedicate()
	p := &pubSub{dc: dc, cancel: cancel, events: make(chan event, 16), done: make(chan struct{})}
	p.lost = dc.SetPubSubHooks(rueidis.PubSubHooks{
		OnMessage: func(m rueidis.PubSubMessage) { p.push(event{m.Channel, false}) },
		OnSubscription: func(s rueidis.PubSubSubscription) {
			if s.Kind == "subscribe" {
				p.push(event{s.Channel, true})
			}
		},
	})
	return p
}

type (
	event struct {
		channel    string
		subscribed bool
	}
	pubSub struct {
		dc     rueidis.DedicatedClient
		cancel func()
		events chan event
		lost   <-chan error
		done   chan struct{}
		once   sync.Once
	}
)

func (p *pubSub) push(e event) {
	select {
	case p.events <- e:
	case <-p.done:
	}
}

func (p *pubSub) Subscribe(ctx context.Context, chs ...string) error {
	return p.dc.Do(ctx, p.dc.B().Subscribe().Channel(chs...).Build()).Error()
}

func (p *pubSub) Unsubscribe(ctx context.Context, chs ...string) error {
	return p.dc.Do(ctx, p.dc.B().Unsubscribe().Channel(chs...).Build()).Error()
}

func (p *pubSub) Ping(ctx context.Context) error {
	return p.dc.Do(ctx, p.dc.B().Ping().Build()).Error()
}

func (p *pubSub) Receive(ctx context.Context, d time.Duration) (string, bool, bool, error) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case e := <-p.events:
		return e.channel, e.subscribed, true, nil
	case err := <-p.lost:
		return "", false, false, cmp.Or(err, errors.New("rueidisstore: Pub/Sub connection closed"))
	case <-timer.C:
	case <-ctx.Done():
	}
	return "", false, false, nil
}

func (p *pubSub) Close() error {
	p.once.Do(func() { close(p.done); p.cancel() })
	return nil
}
