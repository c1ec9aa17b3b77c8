package grpcadapter_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/go-throttle/throttle/grpcadapter"
	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/flow"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// user keys a call on its x-user-id metadata.
var user = grpcadapter.Metadata("x-user-id")

// quiet keeps the limiters' store warnings out of the test output.
var quiet = slog.New(slog.DiscardHandler)

// onStores runs f on a memory store and on a real redis-server.
func onStores(t *testing.T, f func(t *testing.T, st store.Store)) {
	t.Run("memory", func(t *testing.T) { f(t, memstore.New()) })
	t.Run("redis", func(t *testing.T) {
		st := redisstore.New(redistest.Start(t).Client(t))
		t.Cleanup(func() { _ = st.Close() })
		f(t, st)
	})
}

func newLock(t *testing.T, st store.Store, c throttle.LockConfig) *throttle.Lock {
	t.Helper()
	l, err := throttle.NewLock(st, c)
	require.NoError(t, err)
	return l
}

func TestDedupe(t *testing.T) {
	onStores(t, func(t *testing.T, st store.Store) {
		lock := newLock(t, st, throttle.LockConfig{Name: "submit"})
		n, fail := 0, false
		handler := echo(&n)
		conn := serve(t, grpcadapter.Unary(flow.Lock(lock), user), nil,
			func(ctx context.Context, in *structpb.Struct) (*structpb.Struct, error) {
				if fail {
					return nil, status.Error(codes.FailedPrecondition, "no")
				}
				return handler(ctx, in)
			}, nil)

		call(t, conn, nil, "x-user-id", "42").code(t, codes.OK).fields(t, `"submit";q=1;w=5`, `"submit";r=0;t=5`)
		dup := call(t, conn, nil, "x-user-id", "42").code(t, codes.ResourceExhausted).fields(t, `"submit";q=1;w=5`, `"submit";r=0;t=5`)
		require.Equal(t, 5*time.Second, dup.retry(t))
		require.Equal(t, []string{"submit"}, dup.violated(t))
		require.NotContains(t, dup.st.Message(), "42", "the message names no key")
		call(t, conn, nil, "x-user-id", "7").code(t, codes.OK)
		require.Equal(t, 2, n)

		// A failed call frees its key: the retry runs.
		fail = true
		call(t, conn, nil, "x-user-id", "8").code(t, codes.FailedPrecondition).fields(t, `"submit";q=1;w=5`, `"submit";r=0;t=5`)
		fail = false
		call(t, conn, nil, "x-user-id", "8").code(t, codes.OK)
	})
}

func TestCooldownKeepsFailedCallsKey(t *testing.T) {
	lock := newLock(t, memstore.New(), throttle.LockConfig{Name: "reset", Mode: throttle.Cooldown, TTL: time.Minute})
	conn := serve(t, grpcadapter.Unary(flow.Lock(lock), user), nil,
		func(context.Context, *structpb.Struct) (*structpb.Struct, error) {
			return nil, errors.New("mail server down")
		}, nil)
	call(t, conn, nil, "x-user-id", "42").code(t, codes.Unknown)
	dup := call(t, conn, nil, "x-user-id", "42").code(t, codes.ResourceExhausted).fields(t, `"reset";q=1;w=60`, `"reset";r=0;t=60`)
	require.Equal(t, time.Minute, dup.retry(t))
}

// blocking is a handler whose calls wait until release is closed; started
// receives once per call that began.
type blocking struct {
	started chan struct{}
	release chan struct{}
}

func newBlocking() *blocking {
	return &blocking{started: make(chan struct{}, 16), release: make(chan struct{})}
}

func (b *blocking) call(ctx context.Context, in *structpb.Struct) (*structpb.Struct, error) {
	b.started <- struct{}{}
	select {
	case <-b.release:
		return in, nil
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}

// async calls in the background; its answer comes on the channel.
func async(t *testing.T, conn *grpc.ClientConn, md ...string) <-chan answer {
	c := make(chan answer, 1)
	go func() { c <- call(t, conn, map[string]any{"job": "j1"}, md...) }()
	return c
}

func TestExclusive(t *testing.T) {
	onStores(t, func(t *testing.T, st store.Store) {
		lock := newLock(t, st, throttle.LockConfig{Name: "jobs", Mode: throttle.Exclusive, TTL: 3 * time.Second})
		b := newBlocking()
		conn := serve(t, grpcadapter.Unary(flow.Lock(lock), grpcadapter.Static("j1")), nil, b.call, nil)
		first := async(t, conn)
		<-b.started
		busy := call(t, conn, nil).code(t, codes.Aborted).fields(t, `"jobs";q=1;qu="concurrent-requests"`, `"jobs";r=0;t=3`)
		require.GreaterOrEqual(t, busy.retry(t), time.Second)
		_, qf := busy.details(t)
		require.Nil(t, qf, "ABORTED carries no QuotaFailure")
		close(b.release)
		(<-first).code(t, codes.OK).fields(t, `"jobs";q=1;qu="concurrent-requests"`, `"jobs";r=0`)
		call(t, conn, nil).code(t, codes.OK) // freed when the first returned
	})
}

func TestInFlightLimit(t *testing.T) {
	lock := newLock(t, memstore.New(), throttle.LockConfig{Name: "exports", Mode: throttle.Exclusive, Holders: 2})
	b := newBlocking()
	conn := serve(t, grpcadapter.Unary(flow.Lock(lock), user), nil, b.call, nil)
	one, two := async(t, conn, "x-user-id", "42"), async(t, conn, "x-user-id", "42")
	<-b.started
	<-b.started
	call(t, conn, nil, "x-user-id", "42").code(t, codes.Aborted).fields(t, `"exports";q=2;qu="concurrent-requests"`, `"exports";r=0;t=30`)
	close(b.release)
	(<-one).code(t, codes.OK)
	(<-two).code(t, codes.OK)
}

func TestQuota(t *testing.T) {
	onStores(t, func(t *testing.T, st store.Store) {
		q, err := throttle.NewQuota(st, throttle.QuotaConfig{Name: "search"})
		require.NoError(t, err)
		n := 0
		conn := serve(t, grpcadapter.Unary(flow.Quota(q, throttle.Rate{Limit: 2, Window: time.Minute}), user), nil, echo(&n), nil)
		call(t, conn, nil, "x-user-id", "42").code(t, codes.OK).fields(t, `"search";q=2;w=60`, `"search";r=1;t=30`)
		call(t, conn, nil, "x-user-id", "42").code(t, codes.OK).fields(t, `"search";q=2;w=60`, `"search";r=0;t=30`)
		spent := call(t, conn, nil, "x-user-id", "42").code(t, codes.ResourceExhausted).fields(t, `"search";q=2;w=60`, `"search";r=0;t=30`)
		require.Equal(t, 30*time.Second, spent.retry(t))
		require.Equal(t, []string{"search"}, spent.violated(t))
		require.Equal(t, 2, n)
	})
}

// TestStackedQuotaPerPlan decides each call under two rates, four times
// larger for a "pro-" user, read from the call's metadata (Call.Request is
// the Info): the refusal names the rate that refused it.
func TestStackedQuotaPerPlan(t *testing.T) {
	q, err := throttle.NewQuota(memstore.New(), throttle.QuotaConfig{Name: "items"})
	require.NoError(t, err)
	rates := func(c flow.Call) []throttle.Rate {
		k := 1
		if strings.HasPrefix(c.ID, "pro-") {
			k = 4
		}
		require.Equal(t, callMethod, c.Request.(grpcadapter.Info).Method)
		return []throttle.Rate{{Name: "items-burst", Limit: 2 * k, Window: 10 * time.Second},
			{Name: "items-hourly", Limit: 30 * k, Window: time.Hour}}
	}
	n := 0
	conn := serve(t, grpcadapter.Unary(flow.Quota(q, rates), user), nil, echo(&n), nil)
	call(t, conn, nil, "x-user-id", "u").code(t, codes.OK).
		fields(t, `"items-burst";q=2;w=10, "items-hourly";q=30;w=3600`, `"items-burst";r=1;t=5, "items-hourly";r=29;t=120`)
	call(t, conn, nil, "x-user-id", "u").code(t, codes.OK)
	spent := call(t, conn, nil, "x-user-id", "u").code(t, codes.ResourceExhausted)
	require.Equal(t, []string{"items-burst"}, spent.violated(t))
	require.Equal(t, 5*time.Second, spent.retry(t))
	call(t, conn, nil, "x-user-id", "pro-1").code(t, codes.OK).
		fields(t, `"items-burst";q=8;w=10, "items-hourly";q=120;w=3600`, `"items-burst";r=7;t=2, "items-hourly";r=119;t=30`)
}

func TestMissingKey(t *testing.T) {
	lock := newLock(t, memstore.New(), throttle.LockConfig{Name: "submit"})
	n := 0
	conn := serve(t, grpcadapter.Unary(flow.Lock(lock), user), nil, echo(&n), nil)
	a := call(t, conn, nil).code(t, codes.InvalidArgument).fields(t, `"submit";q=1;w=5`, "")
	require.Contains(t, a.st.Message(), `metadata "x-user-id": missing`)
	ri, qf := a.details(t)
	require.Nil(t, ri)
	require.Nil(t, qf)
	require.Zero(t, n)
}

// recording returns key, recording every identity it returns in ids.
func recording(key grpcadapter.Key) (rec grpcadapter.Key, ids *[]string) {
	ids = new([]string)
	return func(i grpcadapter.Info) (string, error) {
		id, err := key(i)
		*ids = append(*ids, id)
		return id, err
	}, ids
}

func TestFirstOfPeer(t *testing.T) {
	lock := newLock(t, memstore.New(), throttle.LockConfig{Name: "submit"})
	rec, ids := recording(grpcadapter.FirstOf(user, grpcadapter.Peer()))
	n := 0
	conn := serve(t, grpcadapter.Unary(flow.Lock(lock), rec), nil, echo(&n), nil)
	call(t, conn, nil).code(t, codes.OK)
	call(t, conn, nil).code(t, codes.ResourceExhausted) // the same peer
	call(t, conn, nil, "x-user-id", "127.0.0.1").code(t, codes.OK)
	require.Equal(t, []string{"1:127.0.0.1", "1:127.0.0.1", "0:127.0.0.1"}, *ids)
}

// TestPeerBehindTrustedProxy: on a real server over loopback, Peer with
// the loopback network trusted keys on the client the x-forwarded-for
// metadata names (right to left, past trusted hops), and on the peer when
// the metadata is absent; without trust, or trusting another network, the
// same metadata is ignored (a client cannot pick its key). Forwarded reads
// the forwarded metadata instead.
func TestPeerBehindTrustedProxy(t *testing.T) {
	loopback := netip.MustParsePrefix("127.0.0.0/8")
	cases := []struct {
		name string
		key  grpcadapter.Key
		md   []string
		want string
	}{
		{"trusted", grpcadapter.Peer(keyfuncs.IPConfig{TrustedProxies: []netip.Prefix{loopback}}),
			[]string{"x-forwarded-for", "203.0.113.7, 198.51.100.2"}, "198.51.100.2"},
		{"trusted, hops", grpcadapter.Peer(keyfuncs.IPConfig{TrustedProxies: []netip.Prefix{loopback, netip.MustParsePrefix("10.0.0.0/8")}}),
			[]string{"x-forwarded-for", "198.51.100.9, 10.1.2.3"}, "198.51.100.9"},
		{"trusted, no metadata", grpcadapter.Peer(keyfuncs.IPConfig{TrustedProxies: []netip.Prefix{loopback}}), nil, "127.0.0.1"},
		{"forwarded", grpcadapter.Peer(keyfuncs.IPConfig{TrustedProxies: []netip.Prefix{loopback}, Forwarded: true}),
			[]string{"forwarded", `for="[2001:db8::1]:4711"`, "x-forwarded-for", "198.51.100.2"}, "2001:db8::1"},
		{"untrusted network", grpcadapter.Peer(keyfuncs.IPConfig{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}),
			[]string{"x-forwarded-for", "198.51.100.2"}, "127.0.0.1"},
		{"no config", grpcadapter.Peer(), []string{"x-forwarded-for", "198.51.100.2"}, "127.0.0.1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lock := newLock(t, memstore.New(), throttle.LockConfig{Name: "peer"})
			rec, ids := recording(c.key)
			n := 0
			conn := serve(t, grpcadapter.Unary(flow.Lock(lock), rec), nil, echo(&n), nil)
			call(t, conn, nil, c.md...).code(t, codes.OK)
			require.Equal(t, []string{c.want}, *ids)
		})
	}
}

// TestFullMethodKey: keyed on the full method name, a Lock holds one key
// per method, whoever calls: the second call of the method is refused for
// another user too. A call without a method name (only a hand-made Info)
// is an error naming it.
func TestFullMethodKey(t *testing.T) {
	lock := newLock(t, memstore.New(), throttle.LockConfig{Name: "per-method"})
	key := grpcadapter.FullMethod()
	rec, ids := recording(key)
	n := 0
	conn := serve(t, grpcadapter.Unary(flow.Lock(lock), rec), nil, echo(&n), nil)
	call(t, conn, nil, "x-user-id", "a").code(t, codes.OK)
	call(t, conn, nil, "x-user-id", "b").code(t, codes.ResourceExhausted)
	require.Len(t, *ids, 2)
	method := (*ids)[0]
	require.Equal(t, method, (*ids)[1])
	require.True(t, strings.HasPrefix(method, "/") && strings.Count(method, "/") == 2, "a full method name: %q", method)
	require.Equal(t, 1, n)
	_, err := key(grpcadapter.Info{Ctx: context.Background()})
	require.ErrorContains(t, err, "full method name")
}

// TestStreamHoldsItsKey: an Exclusive stream holds its key while it is
// open; another stream with the key is refused at once, and one opened
// after the first closed goes ahead.
func TestStreamHoldsItsKey(t *testing.T) {
	onStores(t, func(t *testing.T, st store.Store) {
		lock := newLock(t, st, throttle.LockConfig{Name: "chat", Mode: throttle.Exclusive, TTL: time.Second})
		var lost atomic.Bool
		chat := func(ss grpc.ServerStream) error {
			err := echoChat(ss)
			lost.Store(context.Cause(ss.Context()) == throttle.ErrLost)
			return err
		}
		conn := serve(t, nil, grpcadapter.Stream(flow.Lock(lock), user), nil, chat)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		open := func() (grpc.ClientStream, error) {
			cs, err := conn.NewStream(withUser(ctx, "42"), &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, chatMethod)
			require.NoError(t, err)
			// io.EOF: the server refused the stream already; RecvMsg says how.
			if err := cs.SendMsg(&structpb.Struct{}); err != io.EOF {
				require.NoError(t, err)
			}
			return cs, cs.RecvMsg(new(structpb.Struct))
		}
		first, err := open()
		require.NoError(t, err)
		md, err := first.Header()
		require.NoError(t, err)
		require.Equal(t, `"chat";q=1;qu="concurrent-requests"`, first2(md.Get("ratelimit-policy")))

		// Longer than the lease: the stream keeps its key alive.
		time.Sleep(1500 * time.Millisecond)
		second, err := open()
		require.Equal(t, codes.Aborted, status.Code(err), "%v", err)
		md, _ = second.Header()
		require.Equal(t, `"chat";r=0;t=1`, first2(md.Get("ratelimit")))

		require.NoError(t, first.CloseSend())
		require.ErrorIs(t, first.RecvMsg(new(structpb.Struct)), errEOF)
		require.False(t, lost.Load())
		third, err := open()
		require.NoError(t, err)
		require.NoError(t, third.CloseSend())
		require.ErrorIs(t, third.RecvMsg(new(structpb.Struct)), errEOF)
	})
}

func first2(vs []string) string { return first(vs) }

func TestStoreFailsClosed(t *testing.T) {
	srv := redistest.Start(t)
	st := redisstore.New(srv.Client(t))
	t.Cleanup(func() { _ = st.Close() })
	lock := newLock(t, st, throttle.LockConfig{Name: "jobs", Mode: throttle.Exclusive, // fails closed by default
		Options: throttle.Options{Logger: quiet}})
	n := 0
	conn := serve(t, grpcadapter.Unary(flow.Lock(lock), user), nil, echo(&n), nil)
	call(t, conn, nil, "x-user-id", "42").code(t, codes.OK)
	srv.Kill(t)
	down := call(t, conn, nil, "x-user-id", "42").code(t, codes.Unavailable).fields(t, `"jobs";q=1;qu="concurrent-requests"`, "")
	require.Equal(t, time.Second, down.retry(t))
	require.NotContains(t, down.st.Message(), srv.Addr)
	require.Equal(t, 1, n)
}

// TestStatus: every reason's code and details, as doc.go lists them.
func TestStatus(t *testing.T) {
	for _, c := range []struct {
		ref   flow.Refusal
		code  codes.Code
		retry bool
	}{
		{flow.Refusal{Reason: flow.ReasonBadKey, Err: errors.New("dial 10.0.0.9 refused")}, codes.InvalidArgument, false},
		{flow.Refusal{Reason: flow.ReasonBadCost}, codes.InvalidArgument, false},
		{flow.Refusal{Reason: flow.ReasonKeyReused}, codes.InvalidArgument, false},
		{flow.Refusal{Reason: flow.ReasonStoreUnavailable, RetryAfter: time.Second}, codes.Unavailable, true},
		{flow.Refusal{Reason: flow.ReasonOverloaded, RetryAfter: 2 * time.Second}, codes.Unavailable, true},
		{flow.Refusal{Reason: flow.ReasonInFlight, RetryAfter: time.Second}, codes.Aborted, true},
		{flow.Refusal{Reason: flow.ReasonNotKept, RetryAfter: time.Minute}, codes.FailedPrecondition, false},
		{flow.Refusal{Reason: flow.ReasonCanceled, Err: context.Canceled}, codes.Canceled, false},
		{flow.Refusal{Reason: flow.ReasonCanceled, Err: fmt.Errorf("wrapped: %w", context.DeadlineExceeded)}, codes.DeadlineExceeded, false},
		{flow.Refusal{Reason: flow.ReasonBadRate}, codes.Internal, false},
		{flow.Refusal{Reason: "from-a-later-flow"}, codes.Unknown, false},
	} {
		st := grpcadapter.Status(&c.ref)
		require.Equal(t, c.code, st.Code(), "%s", c.ref.Reason)
		require.Equal(t, c.retry, len(st.Details()) == 1, "%s: %v", c.ref.Reason, st.Details())
		require.NotContains(t, st.Message(), "10.0.0.9", "%s", c.ref.Reason) // never the error
	}
}

// TestCountOnlyFailures: a Quota that charges only failed calls (wrong
// passwords) refunds a call whose handler returned no error, and WithFailed
// says which errors are failures.
func TestCountOnlyFailures(t *testing.T) {
	q, err := throttle.NewQuota(memstore.New(), throttle.QuotaConfig{Name: "login"})
	require.NoError(t, err)
	job := flow.Quota(q, throttle.Rate{Limit: 2, Window: time.Minute}, flow.CountOnlyFailures())
	notFailure := func(err error) bool { return status.Code(err) != codes.NotFound }
	conn := serve(t, grpcadapter.Unary(job, user, grpcadapter.WithFailed(notFailure)), nil,
		func(_ context.Context, in *structpb.Struct) (*structpb.Struct, error) {
			switch in.GetFields()["password"].GetStringValue() {
			case "right":
				return in, nil
			case "gone":
				return nil, status.Error(codes.NotFound, "no such user")
			}
			return nil, status.Error(codes.Unauthenticated, "wrong password")
		}, nil)
	for range 5 { // refunded
		call(t, conn, map[string]any{"password": "right"}, "x-user-id", "42").code(t, codes.OK)
		call(t, conn, map[string]any{"password": "gone"}, "x-user-id", "42").code(t, codes.NotFound)
	}
	call(t, conn, map[string]any{"password": "wrong"}, "x-user-id", "42").code(t, codes.Unauthenticated)
	call(t, conn, map[string]any{"password": "wrong"}, "x-user-id", "42").code(t, codes.Unauthenticated)
	spent := call(t, conn, map[string]any{"password": "right"}, "x-user-id", "42").code(t, codes.ResourceExhausted)
	require.Equal(t, []string{"login"}, spent.violated(t))
}

// TestBadCost: a cost function's error refuses the call with
// INVALID_ARGUMENT before anything is charged.
func TestBadCost(t *testing.T) {
	q, err := throttle.NewQuota(memstore.New(), throttle.QuotaConfig{Name: "upload"})
	require.NoError(t, err)
	cost := func(c flow.Call) (int, error) {
		req, _ := c.Request.(grpcadapter.Info).Request.(*structpb.Struct)
		if n := req.GetFields()["bytes"].GetNumberValue(); n > 0 {
			return int(n), nil
		}
		return 0, errors.New("no size")
	}
	n := 0
	conn := serve(t, grpcadapter.Unary(flow.Quota(q, throttle.Rate{Limit: 100, Window: time.Minute}, flow.WithCost(cost)), user), nil, echo(&n), nil)
	call(t, conn, map[string]any{"bytes": 60}, "x-user-id", "42").code(t, codes.OK).fields(t, `"upload";q=100;w=60`, `"upload";r=40;t=1`)
	call(t, conn, nil, "x-user-id", "42").code(t, codes.InvalidArgument)
	call(t, conn, map[string]any{"bytes": 101}, "x-user-id", "42").code(t, codes.InvalidArgument)
	call(t, conn, map[string]any{"bytes": 60}, "x-user-id", "42").code(t, codes.ResourceExhausted)
	require.Equal(t, 1, n)
}
