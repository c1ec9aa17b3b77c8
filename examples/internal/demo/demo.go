// Package demo is the plumbing the three HTTP examples share — flags, the
// choice of store, serving until SIGINT or SIGTERM — so that each example's
// main.go shows only what differs: how its framework takes the throttle
// middleware.
package demo

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/redisstore"
)

// Routes builds an example's HTTP handler on store, with the given window
// for its POST /submit policy.
type Routes func(store throttle.Store, window time.Duration) (http.Handler, error)

// Main parses the flags every example takes (-addr, -redis, -window), opens
// the store, serves the handler routes builds, and exits 0 after a clean
// shutdown on SIGINT or SIGTERM, or 1 on failure.
func Main(name string, routes Routes) {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on")
	redisAddr := flag.String("redis", "", "Redis address (host:port); empty keeps locks in this process's memory")
	window := flag.Duration("window", 5*time.Second, "how long an accepted submission turns its duplicates away")
	flag.Parse()
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, nil)))

	if err := run(*addr, *redisAddr, *window, routes); err != nil {
		slog.Error(name+" example failed", "err", err)
		os.Exit(1)
	}
}

func run(addr, redisAddr string, window time.Duration, routes Routes) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	store, closeStore, err := openStore(ctx, redisAddr)
	if err != nil {
		return err
	}
	defer closeStore()

	h, err := routes(store, window)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	slog.Info("listening", "addr", ln.Addr().String(), "window", window)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	return serve(ctx, srv, ln)
}

// serve runs srv until ctx ends, then lets the requests in flight finish
// within a bound.
func serve(ctx context.Context, srv *http.Server, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	slog.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// openStore returns a Redis store when redisAddr is set, so that every
// process pointed at that Redis sees the same locks, and otherwise an
// in-memory store, which only this process sees.
func openStore(ctx context.Context, redisAddr string) (throttle.Store, func(), error) {
	if redisAddr == "" {
		slog.Info("using the in-memory store: locks are not shared with other processes")
		return memstore.New(), func() {}, nil // nothing to close: no goroutines
	}
	// ContextTimeoutEnabled lets the policy's short store timeout (100 ms by
	// default) end a Redis call; without it go-redis waits up to 3 s.
	client := redis.NewClient(&redis.Options{Addr: redisAddr, ContextTimeoutEnabled: true})
	pingCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := client.Ping(pingCtx).Err(); err != nil {
		_ = client.Close()
		return nil, nil, err
	}
	slog.Info("using the Redis store", "redis", redisAddr)
	store := redisstore.New(client)
	return store, func() { _ = store.Close(); _ = client.Close() }, nil
}
