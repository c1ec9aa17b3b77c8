// Command nethttp is a net/http service whose POST /submit accepts one
// submission per user per window and answers the duplicates (double
// clicks, client and proxy retries) with 429 Too Many Requests.
//
//	go run ./examples/nethttp                          # in-memory store
//	go run ./examples/nethttp -redis 127.0.0.1:6379    # locks shared through Redis
//	curl -i -X POST -H 'X-User-ID: 42' localhost:8080/submit
//
// The gin and echo examples build the same key for the same user, so that
// all three share locks when they are pointed at one Redis.
package main

import (
	"context"
	"encoding/json"
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

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/nethttp"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/redisstore"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on")
	redisAddr := flag.String("redis", "", "Redis address (host:port); empty keeps locks in this process's memory")
	window := flag.Duration("window", 5*time.Second, "how long an accepted submission turns its duplicates away")
	flag.Parse()
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, nil)))

	if err := run(*addr, *redisAddr, *window); err != nil {
		slog.Error("nethttp example failed", "err", err)
		os.Exit(1)
	}
}

func run(addr, redisAddr string, window time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	store, closeStore, err := openStore(ctx, redisAddr)
	if err != nil {
		return err
	}
	defer closeStore()

	// Dedupe is the zero Mode: an accepted submission holds its key for the
	// window; a failed one (status >= 400) frees it so that the user can retry.
	limiter, err := throttle.New(store, throttle.Policy{Name: "submit", Window: window})
	if err != nil {
		return err
	}
	// Who is submitting: the X-User-ID header, or the peer's IP without it.
	key := keyfuncs.FirstOf(keyfuncs.Header("X-User-ID"), keyfuncs.RemoteIP())

	mux := http.NewServeMux()
	mux.Handle("POST /submit", nethttp.Middleware(limiter, key)(http.HandlerFunc(submit)))
	mux.HandleFunc("GET /healthz", healthz) // outside the middleware: never throttled

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	slog.Info("listening", "addr", ln.Addr().String(), "window", window)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return serve(ctx, srv, ln)
}

func submit(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"status": "accepted", "server": "nethttp"})
}

func healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
}

// serve runs srv until ctx ends (SIGINT or SIGTERM), then lets the requests
// in flight finish within a bound.
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
