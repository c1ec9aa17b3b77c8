package redisstore_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/internal/faultproxy"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"

	"github.com/stretchr/testify/require"
)

// pathSpy is a go-redis hook that tells which path a plain acquisition
// took: a SET sent alone, or a pipeline that starts with one; it also
// counts the follow-ups of refused SETs (the acquire script).
type pathSpy struct{ alone, piped, followUps atomic.Int64 }

func (p *pathSpy) DialHook(next redis.DialHook) redis.DialHook { return next }

func (p *pathSpy) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		switch cmd.Name() {
		case "set":
			p.alone.Add(1)
		case "evalsha": // an EVAL fallback after NOSCRIPT is the same follow-up
			p.followUps.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (p *pathSpy) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && cmds[0].Name() == "set" {
			p.piped.Add(1)
		}
		return next(ctx, cmds)
	}
}

// took returns the path of the acquisitions since the last call: "set",
// "pipeline", or "" when none or both were seen.
func (p *pathSpy) took() string {
	alone, piped := p.alone.Swap(0), p.piped.Swap(0)
	switch {
	case alone > 0 && piped == 0:
		return "set"
	case piped > 0 && alone == 0:
		return "pipeline"
	}
	return ""
}

// TestPlainPathFollowsRefusals: by default a plain acquisition sends SET NX
// alone; after a few refusals in a row it sends the pipeline instead (a
// refusal then costs one round trip, not two), and after a run of grants
// SET alone again. Both paths answer alike throughout.
func TestPlainPathFollowsRefusals(t *testing.T) {
	_, srv, _ := newStore(t)
	c := srv.Client(t)
	spy := &pathSpy{}
	c.AddHook(spy)
	s := redisstore.New(c)
	t.Cleanup(func() { _ = s.Close() })
	<-redisstore.ConfigChecked(s)
	ctx := context.Background()

	if mustAcquire(t, s, store.Request{Key: key(t), Token: storekit.NewToken(), TTL: time.Minute}); spy.took() != "set" {
		t.Fatal("a fresh store's first acquisition did not send SET alone")
	}
	hot := key(t)
	mustAcquire(t, s, store.Request{Key: hot, Token: storekit.NewToken(), TTL: time.Minute})
	spy.took()
	refusals := 0
	for ; refusals < 100; refusals++ {
		g, err := s.Acquire(ctx, store.Request{Key: hot, Token: storekit.NewToken(), TTL: time.Minute})
		if err != nil || g.Acquired || g.Remaining <= 0 || g.Remaining > time.Minute {
			t.Fatalf("contender %d: %+v, %v; want refused with about a minute left", refusals, g, err)
		}
		if spy.took() == "pipeline" {
			break
		}
	}
	require.NotEqualValues(t, 100, refusals, "100 refusals in a row, and still SET alone")
	t.Logf("the pipeline took over after %d refusals", refusals)
	grants := 0
	for ; grants < 1000; grants++ {
		mustAcquire(t, s, store.Request{Key: key(t), Token: storekit.NewToken(), TTL: time.Minute})
		if spy.took() == "set" {
			break
		}
	}
	require.NotEqualValues(t, 1000, grants, "1000 grants in a row, and still the pipeline")
	t.Logf("SET alone took over again after %d grants", grants)
}

// TestSetPathOwnTokenRetry: on the SET path, a SET NX whose reply is lost
// (the connection is reset after Redis ran it) is retried by go-redis and
// refused, the key being held by the request's own token; the follow-up
// acquire script finds the token and the request is granted, for what is left of the TTL.
func TestSetPathOwnTokenRetry(t *testing.T) {
	_, srv, direct := newStore(t)
	p := faultproxy.Start(t, srv.Addr)
	c := redis.NewClient(&redis.Options{Addr: p.Addr(), ContextTimeoutEnabled: true, PoolSize: 1})
	t.Cleanup(func() { _ = c.Close() })
	spy := &pathSpy{}
	c.AddHook(spy)
	s := redisstore.New(c, redisstore.WithPath("set"))
	t.Cleanup(func() { _ = s.Close() })
	<-redisstore.ConfigChecked(s)
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil { // open the connection the fault hits
		t.Fatal(err)
	}
	k, tok := key(t), storekit.NewToken()
	p.ResetOnNextReply()
	g, err := s.Acquire(ctx, store.Request{Key: k, Token: tok, TTL: time.Minute})
	if err != nil || !g.Acquired || g.TTL <= 0 || g.TTL > time.Minute || g.Holds != 1 {
		t.Fatalf("acquisition whose SET reply was lost: %+v, %v; want granted", g, err)
	}
	if n := p.Stats().Resets; n != 1 {
		t.Fatalf("the proxy reset %d connections, want 1", n)
	}
	if n := spy.followUps.Load(); n != 1 {
		t.Fatalf("%d follow-ups, want 1: the retried SET was refused", n)
	}
	if got, err := direct.Get(ctx, k).Result(); err != nil || got != tok {
		t.Fatalf("key holds %q, %v; want the token %q", got, err, tok)
	}
	mustOutcome(t, store.OK)(s.Release(ctx, k, tok))
}

// TestSetPathRefusals: on the SET path a refusal reports the holder's time
// left, whatever holds the key: another token, a reentrant lock (a hash,
// whose GET fails with WRONGTYPE) or a key without expiry; and the own
// token of a key written earlier is granted for the time it has left.
func TestSetPathRefusals(t *testing.T) {
	s, _, c := newStore(t, redisstore.WithPath("set"))
	ctx := context.Background()
	other := key(t)
	mustAcquire(t, s, store.Request{Key: other, Token: storekit.NewToken(), TTL: time.Minute})
	hash := key(t)
	mustAcquire(t, s, store.Request{Key: hash, Token: "owner", TTL: time.Minute, Reentrant: true})
	for _, k := range []string{other, hash} {
		g, err := s.Acquire(ctx, store.Request{Key: k, Token: "owner", TTL: time.Second})
		if err != nil || g.Acquired || g.Remaining <= time.Second || g.Remaining > time.Minute {
			t.Fatalf("refused %s: %+v, %v; want held with about a minute left", k, g, err)
		}
	}
	mine, tok := key(t), storekit.NewToken()
	require.NoError(t, c.Set(ctx, mine, tok, 30*time.Second).Err())
	g, err := s.Acquire(ctx, store.Request{Key: mine, Token: tok, TTL: time.Minute})
	if err != nil || !g.Acquired || g.TTL <= 0 || g.TTL > 30*time.Second {
		t.Fatalf("own token written earlier: %+v, %v; want granted for what is left of 30s", g, err)
	}
	if p, _ := c.PTTL(ctx, mine).Result(); p > 30*time.Second {
		t.Fatalf("the retry lengthened the key to %v", p)
	}
}
