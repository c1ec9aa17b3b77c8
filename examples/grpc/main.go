// Command grpc is the gRPC service throttle.demo.v1.Demo, the HTTP
// examples' policies over gRPC: every request and response is a
// google.protobuf.Struct, so any client calls it without generated code.
//
//	go run ./examples/grpc                          # in-memory store
//	go run ./examples/grpc -redis 127.0.0.1:6379    # shared with the HTTP examples
//	grpcurl -plaintext -H 'x-user-id: 42' -d '{}' 127.0.0.1:9090 throttle.demo.v1.Demo/Submit
//	grpcurl -plaintext -H 'x-user-id: 42' -d '{"q":"gcra"}' 127.0.0.1:9090 throttle.demo.v1.Demo/Search
//	grpcurl -plaintext -d '{"id":"report-7"}' 127.0.0.1:9090 throttle.demo.v1.Demo/RunJob
//	grpcurl -plaintext -H 'x-user-id: 42' -H 'idempotency-key: k1' -d '{"item":"book"}' 127.0.0.1:9090 throttle.demo.v1.Demo/Order
//
// Methods (the user is the metadata x-user-id, else the peer's IP):
//
//	Submit   Dedupe, policy "submit", keyed by user: a duplicate within -window
//	         gets RESOURCE_EXHAUSTED with RetryInfo (the seconds left) and a
//	         QuotaFailure naming "submit".
//	Search   Quota, policy "search", 10 per minute per user (burst 10); the 11th
//	         gets RESOURCE_EXHAUSTED with RetryInfo of about 6 s. Field q: the query.
//	RunJob   Exclusive, policy "jobs", keyed by the request's field id: works for
//	         -work; a second caller for the id meanwhile gets ABORTED.
//	Order    Replay, policy "orders", keyed by user and the metadata
//	         idempotency-key: works about 1 s; a duplicate gets the first response
//	         with the header metadata idempotent-replayed: true; the same key with
//	         another request INVALID_ARGUMENT.
//
// Every answer carries the header metadata ratelimit-policy and ratelimit,
// with the values of the HTTP examples' RateLimit fields. A key that cannot
// be built gets INVALID_ARGUMENT naming what is missing; a store that fails
// closed, UNAVAILABLE. The stored keys are the HTTP examples' for the same
// user, job and policy, so that a duplicate is refused across HTTP and gRPC
// on one Redis. Server reflection and grpc.health.v1.Health (never
// throttled) are on.
//
// Flags: -addr (default 127.0.0.1:9090); -redis (empty: in-memory store;
// one host:port: one Redis; several, comma-separated: Redlock over
// independent masters), -redis-cluster or -redis-sentinel master@host:port;
// -window (default 5s) and -work (default 2s), both positive (otherwise
// exit status 2). SIGINT or SIGTERM shuts it down cleanly (exit status 0):
// the calls in flight get demo.ShutdownGrace to finish.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/go-throttle/throttle/examples/internal/demo"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9090", "address to listen on")
	backendFlags := demo.BackendFlags() // -redis, -redis-cluster, -redis-sentinel
	window := flag.Duration("window", 5*time.Second, "how long an accepted Submit turns its duplicates away")
	work := flag.Duration("work", 2*time.Second, "how long a RunJob works")
	flag.Parse()
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, nil)))

	backend, err := backendFlags()
	switch {
	case *window <= 0:
		err = fmt.Errorf("-window %v: want a positive duration", *window)
	case *work <= 0:
		err = fmt.Errorf("-work %v: want a positive duration", *work)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "grpc: %v\n", err)
		os.Exit(2)
	}
	if err := run(*addr, backend, demo.Settings{Window: *window, Work: *work}); err != nil {
		slog.Error("grpc example failed", "err", err)
		os.Exit(1)
	}
}

func run(addr string, b demo.Backend, s demo.Settings) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, quotas, closeStore, err := b.Open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	s.Quotas = quotas

	guards, err := newGuards(st, s)
	if err != nil {
		return err
	}
	// One interceptor for the server: each Demo method's guard; the health
	// and reflection services are never throttled.
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo,
		h grpc.UnaryHandler) (any, error) {
		if g := guards[info.FullMethod]; g != nil {
			return g(ctx, req, info, h)
		}
		return h(ctx, req)
	}))
	if err := registerDemo(srv, s); err != nil {
		return err
	}
	healthpb.RegisterHealthServer(srv, health.NewServer())
	reflection.Register(srv)

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	slog.Info("listening", "addr", ln.Addr().String(), "window", s.Window, "work", s.Work)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	slog.Info("shutting down", "grace", demo.ShutdownGrace)
	// Let the calls in flight finish; past the grace, cancel them, so that
	// a running job stops and frees its key.
	late := time.AfterFunc(demo.ShutdownGrace, srv.Stop)
	defer late.Stop()
	srv.GracefulStop()
	if err := <-errc; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return err
	}
	return nil
}
