// Package demo is the plumbing the three HTTP examples share — flags, the
// choice of store, serving until SIGINT or SIGTERM, GET /metrics
// (metrics.go), the limiter and body of GET /search (search.go), of POST
// /jobs/{id}/run (jobs.go), of POST /orders (orders.go) and of POST
// /password-reset (reset.go), the fail=1 rejection of POST /submit
// (submit.go), and the order form of GET / with the pages a browser gets
// from POST /submit (form.go, pages.go) — so that each example's main.go
// shows only what differs: how its framework takes the throttle middleware.
//
// Every example's server refuses a path with an empty, "." or ".." segment
// with 400 (see canonicalPaths), bounds how long a client may take to send
// its request (ReadHeaderTimeout, ReadTimeout), and on SIGINT or SIGTERM
// lets the requests in flight finish for ShutdownGrace, then cancels their
// contexts (cause ErrShuttingDown) so that running jobs stop and release
// their keys.
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
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/redlock"
	"github.com/go-throttle/throttle/throttle/store"
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
	Fallback       store.Store
	// Quotas is the store of Quota and Replay policies (GET /search,
	// POST /orders): the store itself, except over Redlock, which keeps
	// neither quotas nor records (see package redlock): then a Redis store
	// on the first master, so that the processes still share one quota
	// per user and replay each other's orders. Nil means the store.
	Quotas store.Store
	// Work is how long a job of POST /jobs/{id}/run works (-work).
	Work time.Duration
	// Observer is the one promthrottle Observer that every limiter of the
	// example reports to (Options.Observer), and Metrics the handler of
	// GET /metrics that exports it. Nil in a Settings made by hand.
	Observer throttle.Observer
	Metrics  http.Handler
	// AdminToken is the bearer token of POST /admin/reset (-admin-token);
	// empty: no such route.
	AdminToken string
}

// Options returns the options every limiter of an example shares: what a
// request gets while Redis fails (-fail), and the Observer GET /metrics
// exports.
func (s Settings) Options() throttle.Options {
	return throttle.Options{WhenStoreFails: s.WhenStoreFails, Fallback: s.Fallback, Observer: s.Observer}
}

// Routes builds an example's HTTP handler on store, with the settings the
// flags chose.
type Routes func(st store.Store, s Settings) (http.Handler, error)

// failModes are the values of -fail.
var failModes = map[string]throttle.FailMode{
	"": 0, "open": throttle.FailOpen, "closed": throttle.FailClosed, "over": throttle.FailOver,
}

// failName is the -fail value of m.
func failName(m throttle.FailMode) string {
	for name, v := range failModes {
		if v == m && name != "" {
			return name
		}
	}
	return "default"
}

// Main parses the flags every example takes (-addr, -redis, -redis-cluster,
// -redis-sentinel, -replica-ack, -window, -work, -fail, -admin-token), opens the store,
// serves the handler routes builds, and exits 0 after a clean shutdown on
// SIGINT or SIGTERM, or 1 on failure (2 for a bad flag).
func Main(name string, routes Routes) {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on")
	redisAddr := flag.String("redis", "", "Redis address (host:port); several, comma-separated: Redlock over those independent masters; empty keeps locks in this process's memory")
	clusterAddrs := flag.String("redis-cluster", "", "Redis Cluster seed nodes (host:port[,...])")
	sentinel := flag.String("redis-sentinel", "", "Redis Sentinel: master@host:port[,...] (the master's name, then the sentinels)")
	replicaAck := flag.Int("replica-ack", 0, "with -redis or -redis-sentinel: admit only once this many replicas have the lock (Redis WAIT); 0: do not wait")
	window := flag.Duration("window", 5*time.Second, "how long an accepted submission turns its duplicates away")
	work := flag.Duration("work", 2*time.Second, "how long a job of POST /jobs/{id}/run works")
	adminToken := flag.String("admin-token", "", "the bearer token of POST /admin/reset?user=ID, which clears a user's quotas and frees its keys; empty: no such route")
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
	if *work <= 0 {
		fmt.Fprintf(os.Stderr, "%s: -work %v: want a positive duration\n", name, *work)
		os.Exit(2)
	}
	s := Settings{Window: *window, Work: *work, WhenStoreFails: mode, AdminToken: *adminToken}
	if mode == throttle.FailOver {
		s.Fallback = memstore.New()
	}
	backend, err := chooseBackend(*redisAddr, *clusterAddrs, *sentinel)
	if err == nil && *replicaAck != 0 {
		if *replicaAck < 0 || (backend.kind != "redis" && backend.kind != "sentinel") {
			err = errors.New("-replica-ack takes a positive count, with -redis (one address) or -redis-sentinel")
		}
		backend.replicaAck = *replicaAck
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(2)
	}
	if err := run(*addr, backend, s, routes); err != nil {
		slog.Error(name+" example failed", "err", err)
		os.Exit(1)
	}
}

func run(addr string, b backend, s Settings, routes Routes) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	st, quotas, closeStore, err := openStore(ctx, b)
	if err != nil {
		return err
	}
	defer closeStore()
	s.Quotas = quotas
	obs, metrics := newMetrics(st, s.Fallback)
	s.Observer, s.Metrics = obs, metrics

	h, err := routes(st, s)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	slog.Info("listening", "addr", ln.Addr().String(), "window", s.Window, "work", s.Work,
		"when_store_fails", failName(s.WhenStoreFails))
	srv := &http.Server{
		Handler: canonicalPaths(h),
		// A client gets a few seconds to send its request, header and
		// body: one that stalls, or trickles, cannot hold a connection,
		// nor a shutdown, for longer (a handler reading the body then
		// gets an error). The deadlines end once the request is read, so
		// a long job is not cut short.
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		// Without it the idle timeout would be ReadTimeout: keep
		// keep-alive connections open longer than that.
		IdleTimeout: 2 * time.Minute,
	}
	return serve(ctx, srv, ln)
}

// The server's bounds: how long a client has to send its request header
// and its whole request, and how long a shutdown lets the requests in
// flight run before cancelling them, then waits for them to return. A
// client that stalls mid-request is cut off by ReadTimeout, well within the
// grace, so a shutdown with only idle or stalled clients left ends cleanly.
const (
	ReadHeaderTimeout = 3 * time.Second
	ReadTimeout       = 5 * time.Second
	ShutdownGrace     = 10 * time.Second
	cancelledGrace    = 2 * time.Second
)

// ErrShuttingDown is the cause with which the contexts of the requests
// still running ShutdownGrace after SIGINT or SIGTERM are cancelled.
var ErrShuttingDown = errors.New("the server is shutting down")

// serve runs srv until ctx ends, then shuts it down: it stops accepting,
// closes idle connections, and lets the requests in flight finish. Those
// still running after ShutdownGrace have their contexts cancelled with
// ErrShuttingDown, so that a long job stops and its key is released, and
// get cancelledGrace more to return; only if one still has not is the
// shutdown a failure.
func serve(ctx context.Context, srv *http.Server, ln net.Listener) error {
	base, cancelRequests := context.WithCancelCause(context.Background())
	defer cancelRequests(nil)
	srv.BaseContext = func(net.Listener) context.Context { return base }

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	slog.Info("shutting down", "grace", ShutdownGrace)
	late := time.AfterFunc(ShutdownGrace, func() {
		slog.Warn("requests still running after the grace period: cancelling them", "grace", ShutdownGrace)
		cancelRequests(ErrShuttingDown)
	})
	defer late.Stop()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), ShutdownGrace+cancelledGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// backend is the store the flags chose: memory (no flag), one Redis, Redlock
// over several independent masters, a Cluster or a Sentinel group.
type backend struct {
	kind   string   // "memory", "redis", "redlock", "cluster" or "sentinel"
	addrs  []string // Redis addresses, seed nodes or sentinels
	master string   // the Sentinel master's name
	// replicaAck is how many replicas must have a lock before it is
	// granted (redisstore.WithReplicaAck); 0 waits for none.
	replicaAck int
}

// chooseBackend reads -redis, -redis-cluster and -redis-sentinel; at most
// one may be set.
func chooseBackend(redisAddrs, clusterAddrs, sentinel string) (backend, error) {
	set := 0
	for _, f := range []string{redisAddrs, clusterAddrs, sentinel} {
		if f != "" {
			set++
		}
	}
	if set > 1 {
		return backend{}, errors.New("-redis, -redis-cluster and -redis-sentinel are exclusive: choose one")
	}
	switch {
	case redisAddrs != "":
		addrs, err := splitAddrs("-redis", redisAddrs)
		if err != nil {
			return backend{}, err
		}
		if len(addrs) == 1 {
			return backend{kind: "redis", addrs: addrs}, nil
		}
		return backend{kind: "redlock", addrs: addrs}, nil
	case clusterAddrs != "":
		addrs, err := splitAddrs("-redis-cluster", clusterAddrs)
		return backend{kind: "cluster", addrs: addrs}, err
	case sentinel != "":
		master, rest, ok := strings.Cut(sentinel, "@")
		if !ok || master == "" {
			return backend{}, fmt.Errorf("-redis-sentinel %q: want master@host:port[,...]", sentinel)
		}
		addrs, err := splitAddrs("-redis-sentinel", rest)
		return backend{kind: "sentinel", addrs: addrs, master: master}, err
	}
	return backend{kind: "memory"}, nil
}

// splitAddrs splits a comma-separated list of host:port addresses.
func splitAddrs(flagName, list string) ([]string, error) {
	var addrs []string
	for _, a := range strings.Split(list, ",") {
		a = strings.TrimSpace(a)
		if _, _, err := net.SplitHostPort(a); err != nil {
			return nil, fmt.Errorf("%s: %q is not host:port", flagName, a)
		}
		addrs = append(addrs, a)
	}
	return addrs, nil
}

// openStore returns the store b names: a Redis store (one server, a Cluster
// or a Sentinel group) or Redlock over independent masters, so that every
// process pointed at the same Redis sees the same locks; otherwise an
// in-memory store, which only this process sees. It also returns the store
// of quotas (Settings.Quotas): the same store, but for Redlock.
func openStore(ctx context.Context, b backend) (locks, quotas store.Store, closeAll func(), err error) {
	switch b.kind {
	case "memory":
		slog.Info("using the in-memory store: locks are not shared with other processes")
		st := memstore.New()
		return st, st, func() {}, nil // nothing to close: no goroutines
	case "redlock":
		return openRedlock(ctx, b.addrs)
	}
	// One server, a Cluster or a Sentinel group. Dial makes the client as
	// the store needs it: ContextTimeoutEnabled lets the policy's short
	// store timeout (100 ms by default) end a Redis call, where go-redis
	// would wait up to 3 s, and the whole pool is dialled at start-up, so
	// that a burst on a cold process queues for ready connections instead
	// of dialling them all at once. The store owns the client.
	pingCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	opts := &redis.UniversalOptions{Addrs: b.addrs, MasterName: b.master, IsClusterMode: b.kind == "cluster"}
	st, err := redisstore.Dial(pingCtx, opts, redisstore.WithReplicaAck(b.replicaAck, 0))
	if err != nil {
		return nil, nil, nil, err
	}
	slog.Info("using the Redis store", "kind", b.kind, "redis", strings.Join(b.addrs, ","), "replica_ack", b.replicaAck)
	return st, st, func() { _ = st.Close() }, nil
}

// warmConns is how many connections a Redis client keeps open and idle:
// go-redis's default pool size, 10 per GOMAXPROCS, so that the whole pool
// is dialled at start-up.
func warmConns() int { return 10 * runtime.GOMAXPROCS(0) }

// ping checks that Redis answers, within a few seconds.
func ping(ctx context.Context, client redis.UniversalClient) error {
	pingCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return client.Ping(pingCtx).Err()
}

// openRedlock returns a Redlock store over independent masters: a lock is
// held when most of them granted it, so it survives the loss of a minority.
// Redlock keeps no quotas: a quota is a count, which a single Redis keeps
// in one round trip, and whose few lost charges a rate limit tolerates. So
// the quotas go to a Redis store on the first master; while it fails, a
// quota does what -fail says (by default, lets requests through).
func openRedlock(ctx context.Context, addrs []string) (locks, quotas store.Store, closeAll func(), err error) {
	clients := make([]redis.UniversalClient, len(addrs))
	closeClients := func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}
	for i, a := range addrs {
		clients[i] = redis.NewClient(&redis.Options{Addr: a, ContextTimeoutEnabled: true, MinIdleConns: warmConns()})
		// Each master must answer at start-up; later a minority may fail.
		if err := ping(ctx, clients[i]); err != nil {
			closeClients()
			return nil, nil, nil, fmt.Errorf("redlock node %s: %w", a, err)
		}
	}
	st, err := redlock.New(clients)
	if err != nil {
		closeClients()
		return nil, nil, nil, err
	}
	qs := redisstore.New(clients[0])
	slog.Info("using the Redis store", "kind", "redlock", "redis", strings.Join(addrs, ","), "quotas", addrs[0])
	return st, qs, func() { _ = st.Close(); _ = qs.Close(); closeClients() }, nil
}
