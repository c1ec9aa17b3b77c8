package grpcadapter_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/go-throttle/throttle/grpcadapter"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/flow"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// orderKey keys an order on its user and idempotency-key.
var orderKey = grpcadapter.Join(user, grpcadapter.Metadata("idempotency-key"))

func newReplay(t *testing.T, st store.Store, c throttle.ReplayConfig) *flow.Job {
	t.Helper()
	r, err := throttle.NewReplay(st, c)
	require.NoError(t, err)
	return flow.Replay(r)
}

func TestReplay(t *testing.T) {
	onStores(t, func(t *testing.T, st store.Store) {
		n := 0
		fail := false
		handler := echo(&n)
		conn := serve(t, grpcadapter.Unary(newReplay(t, st, throttle.ReplayConfig{Name: "orders", TTL: time.Minute}), orderKey), nil,
			func(ctx context.Context, in *structpb.Struct) (*structpb.Struct, error) {
				if fail {
					return nil, errors.New("payment declined")
				}
				_ = grpc.SetHeader(ctx, metadata.Pairs("x-order", "first"))
				return handler(ctx, in)
			}, nil)
		book := map[string]any{"item": "book", "qty": 2}
		orig := call(t, conn, book, "x-user-id", "42", "idempotency-key", "k1").code(t, codes.OK).
			fields(t, `"orders";q=1;w=60`, `"orders";r=0;t=60`)
		require.Equal(t, []string{"first"}, orig.header.Get("x-order"))
		require.Empty(t, orig.header.Get("idempotent-replayed"))

		dup := call(t, conn, book, "x-user-id", "42", "idempotency-key", "k1").code(t, codes.OK)
		require.True(t, proto.Equal(orig.out, dup.out), "%v != %v", orig.out, dup.out)
		require.Equal(t, []string{"true"}, dup.header.Get("idempotent-replayed"))
		require.Equal(t, []string{"first"}, dup.header.Get("x-order"))
		require.Equal(t, `"orders";q=1;w=60`, first(dup.header.Get("ratelimit-policy")))
		require.Regexp(t, `^"orders";r=0;t=(59|60)$`, first(dup.header.Get("ratelimit")))
		require.Equal(t, 1, n, "the duplicate did not run")

		reused := call(t, conn, map[string]any{"item": "pen"}, "x-user-id", "42", "idempotency-key", "k1").code(t, codes.InvalidArgument)
		require.Contains(t, reused.st.Message(), "idempotency key")

		// Another user, another key: their own orders.
		call(t, conn, book, "x-user-id", "7", "idempotency-key", "k1").code(t, codes.OK)
		call(t, conn, book, "x-user-id", "42", "idempotency-key", "k2").code(t, codes.OK)
		require.Equal(t, 3, n)

		// A failed call frees its key: the retry runs.
		fail = true
		call(t, conn, book, "x-user-id", "42", "idempotency-key", "k3").code(t, codes.Unknown)
		fail = false
		call(t, conn, book, "x-user-id", "42", "idempotency-key", "k3").code(t, codes.OK)
		require.Equal(t, 4, n)

		call(t, conn, book, "x-user-id", "42").code(t, codes.InvalidArgument) // no idempotency-key
	})
}

func TestReplayInFlight(t *testing.T) {
	b := newBlocking()
	job := newReplay(t, memstore.New(), throttle.ReplayConfig{Name: "orders", TTL: time.Minute, Wait: -1})
	conn := serve(t, grpcadapter.Unary(job, orderKey), nil, b.call, nil)
	first := async(t, conn, "x-user-id", "42", "idempotency-key", "k1")
	<-b.started
	busy := call(t, conn, map[string]any{"job": "j1"}, "x-user-id", "42", "idempotency-key", "k1").code(t, codes.Aborted)
	require.Equal(t, time.Second, busy.retry(t))
	close(b.release)
	(<-first).code(t, codes.OK)
	again := call(t, conn, map[string]any{"job": "j1"}, "x-user-id", "42", "idempotency-key", "k1").code(t, codes.OK)
	require.Equal(t, []string{"true"}, again.header.Get("idempotent-replayed"))
}

// TestStreamReplayNotKept: a Replay keeps no stream's answer, so a
// duplicate stream gets FAILED_PRECONDITION rather than running again.
func TestStreamReplayNotKept(t *testing.T) {
	job := newReplay(t, memstore.New(), throttle.ReplayConfig{Name: "feeds", TTL: time.Minute})
	conn := serve(t, nil, grpcadapter.Stream(job, orderKey), nil, echoChat)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "x-user-id", "42", "idempotency-key", "k1")
	desc := &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}
	cs, err := conn.NewStream(ctx, desc, chatMethod)
	require.NoError(t, err)
	require.NoError(t, cs.CloseSend())
	require.ErrorIs(t, cs.RecvMsg(new(structpb.Struct)), errEOF)
	cs, err = conn.NewStream(ctx, desc, chatMethod)
	require.NoError(t, err)
	require.Equal(t, codes.FailedPrecondition.String(), codeOf(cs.RecvMsg(new(structpb.Struct))).String())
}

// TestPanic: a handler's panic ends the hold as failed (a Dedupe key is
// freed) and keeps unwinding, in both interceptors.
func TestPanic(t *testing.T) {
	lock, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "submit"})
	require.NoError(t, err)
	job, key := flow.Lock(lock), grpcadapter.Static("k")
	unary := grpcadapter.Unary(job, key)
	info := &grpc.UnaryServerInfo{FullMethod: callMethod}
	boom := func(context.Context, any) (any, error) { panic("boom") }
	ok := func(context.Context, any) (any, error) { return &structpb.Struct{}, nil }
	require.PanicsWithValue(t, "boom", func() { _, _ = unary(context.Background(), &structpb.Struct{}, info, boom) })
	_, err = unary(context.Background(), &structpb.Struct{}, info, ok)
	require.NoError(t, err, "the panicked call's key was freed")
	_, err = unary(context.Background(), &structpb.Struct{}, info, ok)
	require.Equal(t, codes.ResourceExhausted.String(), codeOf(err).String())

	stream := grpcadapter.Stream(flow.Lock(lock), grpcadapter.Static("s"))
	sinfo := &grpc.StreamServerInfo{FullMethod: chatMethod}
	ss := &fakeStream{ctx: context.Background()}
	require.PanicsWithValue(t, "boom", func() {
		_ = stream(nil, ss, sinfo, func(any, grpc.ServerStream) error { panic("boom") })
	})
	require.NoError(t, stream(nil, ss, sinfo, func(any, grpc.ServerStream) error { return nil }))
}

// fakeStream is a grpc.ServerStream for calling a stream interceptor
// directly: only its context and header are used.
type fakeStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *fakeStream) Context() context.Context    { return s.ctx }
func (s *fakeStream) SetHeader(metadata.MD) error { return nil }
