package grpcadapter_test

import (
	"context"
	"fmt"
	"net"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/go-throttle/throttle/grpcadapter"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/flow"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// A Dedupe lock turns away a caller's duplicate within the window with
// RESOURCE_EXHAUSTED, a RetryInfo and a QuotaFailure detail; every answer
// carries the RateLimit header metadata. Here it guards the standard
// health service, keyed by the x-user-id metadata, else the peer address.
func Example() {
	lock, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "submit"})
	if err != nil {
		panic(err)
	}
	user := grpcadapter.FirstOf(grpcadapter.Metadata("x-user-id"), grpcadapter.Peer())
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(grpcadapter.Unary(flow.Lock(lock), user)))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		panic(err)
	}
	defer conn.Close()

	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-user-id", "42")
	for range 2 {
		var md metadata.MD
		_, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&md))
		fmt.Println(status.Code(err), md.Get("ratelimit-policy"), md.Get("ratelimit"))
		for _, d := range status.Convert(err).Details() {
			switch d := d.(type) {
			case *errdetails.RetryInfo:
				fmt.Println("retry in", d.GetRetryDelay().AsDuration())
			case *errdetails.QuotaFailure:
				fmt.Println("violated", d.GetViolations()[0].GetSubject())
			}
		}
	}
	// Output:
	// OK ["submit";q=1;w=5] ["submit";r=0;t=5]
	// ResourceExhausted ["submit";q=1;w=5] ["submit";r=0;t=5]
	// retry in 5s
	// violated submit
}
