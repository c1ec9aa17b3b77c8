// Command worker is a sync service in the style of seed 001: several worker
// processes share a list of customers, and each customer is synced by one
// worker at a time under a lock in Redis.
//
//	go run ./examples/worker -redis 127.0.0.1:6379 [-id NAME] [-customers N] [-work D] [-ttl D] [-rounds N]
//
// The customers are c1…cN (-customers, default 10). In each round (-rounds,
// default 1) the worker walks the list in order and tries each customer's
// lock once (an Exclusive throttle.Lock named "sync", no waiting, with a
// fencing token). A customer held by another worker is skipped. A customer
// it locks is synced for -work (default 3s) inside Lock.Do under a lease of
// -ttl (default 1s, the lock's TTL): the sync outlives its lease several
// times over, and the lease refresher in Do extends it every ttl/3 until the
// sync returns; the lock is then released.
//
// Syncs run concurrently: the walk starts a goroutine for every customer it
// locks and moves on to the next customer as soon as the lock is taken, and
// the round ends when all of its syncs have finished. So a walk takes
// milliseconds, not N syncs: a worker holds many leases at once (which is
// what the refresher is for), a customer is never left unsynced because its
// worker is busy with another one, and a worker that starts while others
// sync takes exactly the customers that are still free. Run one at a time
// instead, a worker would hold c1 while c2…cN wait for it even when other
// workers are idle.
//
// Every event is one line on standard output:
//
//	<time> worker=<id> customer=<c> event=<start|done|skipped|lost> fence=<n>
//
// <time> is RFC 3339 in UTC with nine fractional digits, so that lines from
// several workers sort by time as plain text. fence is the fencing token of
// the acquisition, which strictly increases per customer across all workers
// (0 for skipped). lost means the lease was lost (the key expired, was
// deleted or was taken) and the sync was cancelled. Diagnostics go to
// standard error.
//
// The worker exits 0 when its rounds are done, including rounds with lost
// leases, which are events and not failures. SIGINT or SIGTERM cancels the
// running syncs, which release their locks, and the worker exits 0 without
// starting anything new. It exits 1 when Redis cannot be reached or fails
// during a round, and 2 on bad flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redisstore"
)

// maxCustomers bounds -customers: each round keeps a goroutine per locked
// customer.
const maxCustomers = 10000

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// config is the command line.
type config struct {
	redis     string
	id        string
	customers int
	work      time.Duration
	ttl       time.Duration
	rounds    int
}

func parse(args []string, stderr io.Writer) (config, error) {
	host, _ := os.Hostname()
	if host == "" {
		host = "worker"
	}
	var c config
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.redis, "redis", "", "Redis address (host:port), required")
	fs.StringVar(&c.id, "id", host+"-"+strconv.Itoa(os.Getpid()), "name of this worker in the output")
	fs.IntVar(&c.customers, "customers", 10, "number of customers, named c1…cN")
	fs.DurationVar(&c.work, "work", 3*time.Second, "how long one sync takes")
	fs.DurationVar(&c.ttl, "ttl", time.Second, "lease of a customer's lock, refreshed every ttl/3 while the sync runs")
	fs.IntVar(&c.rounds, "rounds", 1, "how many times to walk the customer list")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	case c.redis == "":
		return c, errors.New("-redis is required")
	case !validID(c.id):
		return c, fmt.Errorf("-id %q: want 1 to 64 printable characters without spaces or '='", c.id)
	case c.customers < 1 || c.customers > maxCustomers:
		return c, fmt.Errorf("-customers %d: want 1 to %d", c.customers, maxCustomers)
	case c.work < 0:
		return c, fmt.Errorf("-work %v must not be negative", c.work)
	case c.ttl < 3*time.Millisecond:
		return c, fmt.Errorf("-ttl %v: want at least 3ms", c.ttl)
	case c.rounds < 1:
		return c, fmt.Errorf("-rounds %d: want at least 1", c.rounds)
	}
	return c, nil
}

// validID keeps the id from breaking the key=value output.
func validID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c >= 0x7f || c == '=' {
			return false
		}
	}
	return true
}

// run is the whole command; main only adds the signals and the exit.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "worker:", err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))

	// ContextTimeoutEnabled makes every store call end at Options.Timeout.
	rdb := redis.NewClient(&redis.Options{Addr: c.redis, ContextTimeoutEnabled: true})
	defer rdb.Close()
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	err = rdb.Ping(pctx).Err()
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "worker: cannot reach Redis at %s: %v\n", c.redis, err)
		return 1
	}

	store := redisstore.New(rdb)
	defer store.Close()
	lock, err := throttle.NewLock(store, throttle.LockConfig{
		Name:    "sync",
		Mode:    throttle.Exclusive,
		TTL:     c.ttl, // the lease, refreshed every ttl/3 while a sync runs
		Fence:   true,
		Options: throttle.Options{Logger: logger},
	})
	if err != nil {
		fmt.Fprintln(stderr, "worker:", err)
		return 2
	}
	w := &worker{id: c.id, lock: lock, work: c.work, log: &events{w: stdout}, logger: logger}
	customers := make([]string, c.customers)
	for i := range customers {
		customers[i] = "c" + strconv.Itoa(i+1)
	}
	for range c.rounds {
		if err := w.round(ctx, customers); err != nil {
			fmt.Fprintln(stderr, "worker:", err)
			return 1
		}
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "worker: interrupted; running syncs were cancelled and released")
			return 0
		}
	}
	return 0
}
