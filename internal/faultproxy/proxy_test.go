package faultproxy_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/go-throttle/throttle/internal/faultproxy"
	"github.com/go-throttle/throttle/internal/redistest"
)

// env is a real redis-server, a client talking to it directly, a proxy in
// front of it and a client talking through the proxy.
type env struct {
	srv    *redistest.Server
	direct *redis.Client
	proxy  *faultproxy.Proxy
	viaP   *redis.Client
}

func setup(t *testing.T) *env {
	t.Helper()
	srv := redistest.Start(t)
	p := faultproxy.Start(t, srv.Addr)
	e := &env{srv: srv, direct: srv.Client(t), proxy: p, viaP: newClient(t, p.Addr())}
	// Open the proxied connection before any fault, so that faults hit a
	// connection that is already established.
	if err := e.viaP.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("PING through the proxy: %v", err)
	}
	return e
}

// newClient returns a go-redis client that ends calls at their context's
// deadline and never retries, so that each fault shows as an error, on one
// connection so that "the old connection" is well defined.
func newClient(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{
		Addr:                  addr,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		PoolSize:              1,
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// isTimeout reports a deadline error, the context's or the socket's.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout())
}

// isConnError reports an error from a connection the peer closed or reset.
func isConnError(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// waitValue polls the direct client until key holds want.
func waitValue(t *testing.T, c *redis.Client, key, want string) {
	t.Helper()
	ctx := ctxFor(t, 10*time.Second)
	for {
		v, err := c.Get(ctx, key).Result()
		if err == nil && v == want {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("GET %s = %q, %v; want %q", key, v, err, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitStats polls the proxy's counters until ok accepts them.
func waitStats(t *testing.T, p *faultproxy.Proxy, what string, ok func(faultproxy.Stats) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok(p.Stats()) {
		if time.Now().After(deadline) {
			t.Fatalf("proxy never saw %s: %+v", what, p.Stats())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestForwards proves that without faults the proxy is transparent and
// counts what passes.
func TestForwards(t *testing.T) {
	e := setup(t)
	ctx := ctxFor(t, 10*time.Second)
	if err := e.viaP.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET through the proxy: %v", err)
	}
	waitValue(t, e.direct, "k", "v")
	st := e.proxy.Stats()
	if st.Accepted != 1 || st.Open != 1 || st.ClientBytes == 0 || st.ServerBytes == 0 || st.DroppedBytes != 0 {
		t.Fatalf("stats = %+v; want one open connection and bytes both ways", st)
	}
}

// TestLatency proves that each direction's delay is added to a round trip
// on a connection that was open before the delay was set. Only lower
// bounds are checked: a loaded machine may add any amount on top.
func TestLatency(t *testing.T) {
	e := setup(t)
	ctx := ctxFor(t, 10*time.Second)
	for _, tc := range []struct {
		name               string
		toServer, toClient time.Duration
	}{
		{"toServer", 100 * time.Millisecond, 0},
		{"toClient", 0, 100 * time.Millisecond},
		{"both", 60 * time.Millisecond, 60 * time.Millisecond},
	} {
		e.proxy.SetLatency(tc.toServer, tc.toClient)
		start := time.Now()
		if err := e.viaP.Ping(ctx).Err(); err != nil {
			t.Fatalf("%s: PING: %v", tc.name, err)
		}
		if got, want := time.Since(start), tc.toServer+tc.toClient; got < want {
			t.Errorf("%s: PING took %v; want at least %v", tc.name, got, want)
		}
	}
	e.proxy.SetLatency(0, 0)
	if err := e.viaP.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after clearing latency: %v", err)
	}
}

// TestBlackHole proves that a black hole makes calls through the proxy time
// out (on the open connection and on new ones, which are still accepted)
// while Redis itself answers, that the held command is delivered late once
// the black hole is cleared, and that new commands then go through.
func TestBlackHole(t *testing.T) {
	e := setup(t)
	ctx := ctxFor(t, 10*time.Second)
	e.proxy.SetBlackHole(true)

	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err := e.viaP.Set(short, "k", "v", 0).Err()
	cancel()
	if !isTimeout(err) {
		t.Fatalf("SET into a black hole: %v; want a timeout", err)
	}
	if err := e.direct.Ping(ctx).Err(); err != nil {
		t.Fatalf("direct PING during the black hole: %v", err)
	}
	before := e.proxy.Stats().Accepted
	other := newClient(t, e.proxy.Addr())
	short, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
	err = other.Ping(short).Err()
	cancel()
	if !isTimeout(err) {
		t.Fatalf("PING on a new connection into a black hole: %v; want a timeout", err)
	}
	if got := e.proxy.Stats().Accepted; got <= before {
		t.Fatalf("new connection not accepted during the black hole (accepted %d, then %d)", before, got)
	}
	// Nothing reached Redis.
	if n, err := e.direct.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS k during the black hole = %d, %v; want 0", n, err)
	}

	e.proxy.SetBlackHole(false)
	// The held SET is delivered although its caller gave up.
	waitValue(t, e.direct, "k", "v")
	if err := e.viaP.Set(ctx, "k2", "v2", 0).Err(); err != nil {
		t.Fatalf("SET after clearing the black hole: %v", err)
	}
	waitValue(t, e.direct, "k2", "v2")
}

// TestResetAll proves that ResetAll makes a call in flight fail at once
// with a connection error (not at its deadline) and that the client then
// recovers on a new connection.
func TestResetAll(t *testing.T) {
	e := setup(t)
	ctx := ctxFor(t, 10*time.Second)
	// Hold the call in the proxy so that it is in flight when we reset.
	e.proxy.SetBlackHole(true)
	sent := e.proxy.Stats().ClientBytes
	errc := make(chan error, 1)
	go func() { errc <- e.viaP.Set(ctx, "k", "v", 0).Err() }()
	waitStats(t, e.proxy, "the SET", func(s faultproxy.Stats) bool { return s.ClientBytes > sent })

	if n := e.proxy.ResetAll(); n != 1 {
		t.Fatalf("ResetAll reset %d connections; want 1", n)
	}
	err := <-errc
	if err == nil || isTimeout(err) || !isConnError(err) {
		t.Fatalf("SET in flight during ResetAll: %v; want a connection error", err)
	}
	if got := e.proxy.Stats().Resets; got != 1 {
		t.Fatalf("Stats.Resets = %d; want 1", got)
	}

	e.proxy.SetBlackHole(false)
	if err := e.viaP.Set(ctx, "k", "v2", 0).Err(); err != nil {
		t.Fatalf("SET after ResetAll: %v", err)
	}
	waitValue(t, e.direct, "k", "v2")
}

// TestRefuse proves that SetRefuse makes new connections fail with a
// connection error while an open one keeps working, and that clearing it
// lets new connections in.
func TestRefuse(t *testing.T) {
	e := setup(t)
	ctx := ctxFor(t, 10*time.Second)
	e.proxy.SetRefuse(true)

	fresh := newClient(t, e.proxy.Addr())
	err := fresh.Ping(ctx).Err()
	if err == nil || isTimeout(err) || !isConnError(err) {
		t.Fatalf("PING on a new connection while refusing: %v; want a connection error", err)
	}
	if got := e.proxy.Stats().Refused; got == 0 {
		t.Fatal("Stats.Refused = 0 after a refused connection")
	}
	if err := e.viaP.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING on the connection opened before SetRefuse: %v", err)
	}

	e.proxy.SetRefuse(false)
	if err := fresh.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING on a new connection after clearing refusal: %v", err)
	}
}

// TestDropReplies proves the ambiguous outcome: with replies dropped, SET
// times out on the client although Redis applied it.
func TestDropReplies(t *testing.T) {
	e := setup(t)
	ctx := ctxFor(t, 10*time.Second)
	e.proxy.SetDropReplies(true)

	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err := e.viaP.Set(short, "k", "v", 0).Err()
	cancel()
	if !isTimeout(err) {
		t.Fatalf("SET with replies dropped: %v; want a timeout", err)
	}
	waitValue(t, e.direct, "k", "v") // the command ran
	if got := e.proxy.Stats().DroppedBytes; got == 0 {
		t.Fatal("Stats.DroppedBytes = 0 after a dropped reply")
	}

	e.proxy.SetDropReplies(false)
	if err := e.viaP.Set(ctx, "k", "v2", 0).Err(); err != nil {
		t.Fatalf("SET after clearing dropped replies: %v", err)
	}
	waitValue(t, e.direct, "k", "v2")
}

// TestResetOnNextReply proves the one-shot: the command runs, its reply is
// discarded and the client gets a connection error instead of waiting for
// its deadline; the next command goes through.
func TestResetOnNextReply(t *testing.T) {
	e := setup(t)
	ctx := ctxFor(t, 10*time.Second)
	e.proxy.ResetOnNextReply()

	err := e.viaP.Set(ctx, "k", "v", 0).Err()
	if err == nil || isTimeout(err) || !isConnError(err) {
		t.Fatalf("SET with ResetOnNextReply armed: %v; want a connection error", err)
	}
	waitValue(t, e.direct, "k", "v") // the command ran
	if st := e.proxy.Stats(); st.Resets != 1 || st.DroppedBytes == 0 {
		t.Fatalf("stats = %+v; want one reset and dropped bytes", st)
	}
	// One shot only.
	if err := e.viaP.Set(ctx, "k", "v2", 0).Err(); err != nil {
		t.Fatalf("SET after the one-shot fired: %v", err)
	}
	waitValue(t, e.direct, "k", "v2")
}

// TestClear proves that Clear removes every fault, including a disarmed
// one-shot and a black hole, whose held bytes are then delivered.
func TestClear(t *testing.T) {
	e := setup(t)
	ctx := ctxFor(t, 10*time.Second)
	e.proxy.SetBlackHole(true)
	e.proxy.SetDropReplies(true)
	e.proxy.SetRefuse(true)
	e.proxy.ResetOnNextReply()
	e.proxy.Clear()
	if err := e.viaP.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET after Clear: %v", err)
	}
	if err := newClient(t, e.proxy.Addr()).Ping(ctx).Err(); err != nil {
		t.Fatalf("PING on a new connection after Clear: %v", err)
	}
	if st := e.proxy.Stats(); st.Resets != 0 || st.Refused != 0 || st.DroppedBytes != 0 {
		t.Fatalf("stats = %+v; want no fault applied after Clear", st)
	}
}

// TestCloseLeavesNoGoroutine proves that Close, with a connection held in
// a black hole and a call in flight, ends the call and returns only once
// every goroutine the proxy started is done: none still waits, and all
// exit (goleak).
func TestCloseLeavesNoGoroutine(t *testing.T) {
	srv := redistest.Start(t)
	ignore := goleak.IgnoreCurrent() // the server's own goroutines
	p := faultproxy.Start(t, srv.Addr)
	c := redis.NewClient(&redis.Options{Addr: p.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
	ctx := ctxFor(t, 10*time.Second)
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	p.SetBlackHole(true)
	errc := make(chan error, 1)
	go func() { errc <- c.Ping(ctx).Err() }()
	waitStats(t, p, "the PING", func(s faultproxy.Stats) bool { return s.ClientBytes > 0 && s.Open == 1 })

	p.Close()
	// No retry here: Close must not return while its goroutines wait on
	// anything. One may still be seen on its way out, runnable after its
	// deferred wg.Done (which let Close return); goleak below waits for it.
	buf := make([]byte, 1<<20)
	for _, g := range bytes.Split(buf[:runtime.Stack(buf, true)], []byte("\n\n")) {
		exiting := bytes.Contains(g, []byte(" [runnable]:")) || bytes.Contains(g, []byte(" [running]:"))
		if bytes.Contains(g, []byte("faultproxy.(*Proxy).")) && !exiting {
			t.Fatalf("a proxy goroutine still waits after Close returned:\n%s", g)
		}
	}
	if err := <-errc; err == nil || isTimeout(err) {
		t.Fatalf("PING in flight during Close: %v; want a connection error", err)
	}
	p.Close() // idempotent
	_ = c.Close()
	goleak.VerifyNone(t, ignore)
}

// TestResetAllDuringDial proves that a connection accepted before ResetAll
// and SetRefuse, but still dialling the server when they ran, is reset too
// and forwards nothing: a fail-closed test that refuses the store must not
// have a connection slip through to the real server.
func TestResetAllDuringDial(t *testing.T) {
	e := setup(t)
	reached, release := make(chan struct{}), make(chan struct{})
	faultproxy.SetBeforeLink(e.proxy, func() {
		close(reached)
		<-release
	})
	c, err := net.Dial("tcp", e.proxy.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("SET dialled yes\r\n")); err != nil {
		t.Fatal(err)
	}
	<-reached // accepted and dialled, not yet registered
	e.proxy.SetRefuse(true)
	e.proxy.ResetAll()
	close(release)

	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if err == nil || isTimeout(err) {
		t.Fatalf("read on a connection accepted before ResetAll: %q, %v; want it reset", buf[:n], err)
	}
	if got, err := e.direct.Exists(ctxFor(t, 5*time.Second), "dialled").Result(); err != nil || got != 0 {
		t.Fatalf("EXISTS dialled = %d, %v; the SET reached the server through a reset connection", got, err)
	}
}
