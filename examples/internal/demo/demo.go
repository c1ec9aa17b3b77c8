// Package demo is the plumbing the three HTTP examples share — flags, the
// choice of store, serving until SIGINT or SIGTERM — so that each example's
// main.go shows only what differs: how its framework takes the throttle
// middleware.
package demo

import (
	"context"
	"errors"
	"flag"
	"fmt"
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

// Settings are what the flags say about the examples' policies.
type Settings struct {
	// Window is how long an accepted submission turns its duplicates away
	// (-window).
	Window time.Duration
	// WhenStoreFails and Fallback say what a request gets while Redis
	// fails (-fail): the policy's default, open, closed, or over to a
	// memory store in this process.
	WhenStoreFails throttle.FailMode
	Fallback       throttle.Store
}

// Routes builds an example's HTTP handler on store, with the settings the
// flags chose.
type Routes func(store throttle.Store, s Settings) (http.Handler, error)

// failModes are the values of -fail.
var failModes = map[string]throttle.FailMode{
	"": throttle.FailDefault, "open": throttle.FailOpen, "closed": throttle.FailClosed, "over": throttle.FailOver,
}

// Main parses the flags every example takes (-addr, -redis, -window, -fail),
// opens the store, serves the handler routes builds, and exits 0 after a
// clean shutdown on SIGINT or SIGTERM, or 1 on failure (2 for a bad flag).
func Main(name string, routes Routes) {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on")
	redisAddr := flag.String("redis", "", "Redis address (host:port); empty keeps locks in this process's memory")
	window := flag.Duration("window", 5*time.Second, "how long an accepted submission turns its duplicates away")
	fail := flag.String("fail", "", "what a request gets while Redis fails: open, closed, or over (to a memory store in this process); empty: the policy's default")
	flag.Parse()
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, nil)))

	mode, ok := failModes[*fail]
	if !ok {
		fmt.Fprintf(os.Stderr, "%s: -fail %q: want open, closed or over\n", name, *fail)
		os.Exit(2)
	}
	if *window <= 0 {
		fmt.Fprintf(os.Stderr, "%s: -window %v: want a positive duration\n", name, *window)
		os.Exit(2)
	}
	s := Settings{Window: *window, WhenStoreFails: mode}
	if mode == throttle.FailOver {
		s.Fallback = memstore.New()
	}
	if err := run(*addr, *redisAddr, s, routes); err != nil {
		slog.Error(name+" example failed", "err", err)
		os.Exit(1)
	}
}

func run(addr, redisAddr string, s Settings, routes Routes) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	store, closeStore, err := openStore(ctx, redisAddr)
	if err != nil {
		return err
	}
	defer closeStore()

	h, err := routes(store, s)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	slog.Info("listening", "addr", ln.Addr().String(), "window", s.Window, "when_store_fails", s.WhenStoreFails.String())
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
