package grpcadapter_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/go-throttle/throttle/grpcadapter"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/flow"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// benchUsers is the key cardinality: each call is one of 1,024 users,
// in turn, named by the x-user-id metadata.
const benchUsers = 1024

// BenchmarkUnary compares a unary call through Unary on a memory-store
// Quota (a limit no user reaches: every call is admitted, charged, and
// answered with its RateLimit metadata) with the bare handler, on one
// goroutine and on GOMAXPROCS. "direct" calls the interceptor as the
// server would, with a transport stream that only takes the header;
// "loopback" calls a real server over TCP with a real client, where the
// interceptor's cost is a part of the whole call's.
func BenchmarkUnary(b *testing.B) {
	q, err := throttle.NewQuota(memstore.New(), throttle.QuotaConfig{Name: "search"})
	if err != nil {
		b.Fatal(err)
	}
	quota := grpcadapter.Unary(flow.Quota(q, throttle.Rate{Limit: 1_000_000, Window: time.Hour}), grpcadapter.Metadata("x-user-id"))
	bare := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		return h(ctx, req)
	}
	for _, c := range []struct {
		name string
		icpt grpc.UnaryServerInterceptor
	}{{"bare", bare}, {"quota", quota}} {
		b.Run("direct/"+c.name, func(b *testing.B) { benchDirect(b, c.icpt, false) })
		b.Run("direct-parallel/"+c.name, func(b *testing.B) { benchDirect(b, c.icpt, true) })
		b.Run("loopback/"+c.name, func(b *testing.B) { benchLoopback(b, c.icpt) })
	}
}

// headerStream is a transport stream that takes the header and sends
// nothing.
type headerStream struct{ grpc.ServerTransportStream }

func (headerStream) Method() string               { return callMethod }
func (headerStream) SetHeader(metadata.MD) error  { return nil }
func (headerStream) SendHeader(metadata.MD) error { return nil }

func benchDirect(b *testing.B, icpt grpc.UnaryServerInterceptor, parallel bool) {
	ctxs := make([]context.Context, benchUsers)
	for i := range ctxs {
		ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("x-user-id", "user-"+strconv.Itoa(i)))
		ctxs[i] = grpc.NewContextWithServerTransportStream(ctx, headerStream{})
	}
	req, resp := &structpb.Struct{}, &structpb.Struct{}
	info := &grpc.UnaryServerInfo{FullMethod: callMethod}
	h := func(context.Context, any) (any, error) { return resp, nil }
	b.ReportAllocs()
	if !parallel {
		for i := 0; b.Loop(); i++ {
			if _, err := icpt(ctxs[i%benchUsers], req, info, h); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	b.RunParallel(func(pb *testing.PB) {
		for i := 0; pb.Next(); i++ {
			if _, err := icpt(ctxs[i%benchUsers], req, info, h); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func benchLoopback(b *testing.B, icpt grpc.UnaryServerInterceptor) {
	n := 0
	conn := serve(b, icpt, nil, echo(&n), nil)
	ctxs := make([]context.Context, benchUsers)
	for i := range ctxs {
		ctxs[i] = metadata.AppendToOutgoingContext(context.Background(), "x-user-id", "user-"+strconv.Itoa(i))
	}
	req := &structpb.Struct{}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := conn.Invoke(ctxs[i%benchUsers], callMethod, req, new(structpb.Struct)); err != nil {
			b.Fatal(err)
		}
	}
}
