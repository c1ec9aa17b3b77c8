// Command loadbench measures what throttle costs on the request path: every
// store and the raw clients they are built on, side by side in one run
// against a private redis-server it starts, at several concurrencies, and
// (with -http) the example servers end to end over HTTP. It prints Markdown
// tables, the ones in the README's performance section:
//
//	go run ./internal/cmd/loadbench            # stores and clients
//	go run ./internal/cmd/loadbench -http      # example servers over HTTP
//
// Every call takes a distinct key (key cardinality = number of calls), so
// every admission succeeds. Each cell makes -ops calls (a quarter of them at
// concurrency 1) shared by that many goroutines. The rows run in turn, and
// the whole table -passes times, so that a burst of other load on the
// machine hits one pass of a row rather than all of it; each figure is
// shown as the range over the passes. Ratios are throughput divided by raw
// go-redis SetNX's in the same pass at the same concurrency.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

func main() {
	var (
		concs  = flag.String("conc", "1,16,64", "comma-separated numbers of concurrent callers")
		ops    = flag.Int("ops", 60000, "calls per cell (a quarter at concurrency 1)")
		passes = flag.Int("passes", 2, "passes over the whole table")
		only   = flag.String("only", "", "run only the rows whose name contains this")
		http   = flag.Bool("http", false, "measure the nethttp example server end to end instead")
		delay  = flag.Duration("flush-delay", 20*time.Microsecond, "also measure the rueidis rows on a client with this ClientOption.MaxFlushDelay (0: only rueidis's defaults)")
		addr   = flag.String("redis", "", "use the Redis at this address instead of starting a private redis-server (its keys expire 10 s after the run)")
	)
	flag.Parse()
	conc, err := parseConcs(*concs)
	if err == nil {
		printMachine()
		if *http {
			err = runHTTP(conc, *ops, *passes, *addr)
		} else {
			err = runStores(conc, *ops, *passes, *only, *addr, *delay)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadbench:", err)
		os.Exit(1)
	}
}

func parseConcs(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-conc: %q is not a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// printMachine prints what the figures depend on.
func printMachine() {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	redisVersion := "redis-server not found"
	if out, err := exec.Command("redis-server", "--version").Output(); err == nil {
		redisVersion = strings.TrimSpace(string(out))
		if i := strings.Index(redisVersion, " sha="); i > 0 {
			redisVersion = redisVersion[:i]
		}
	}
	fmt.Printf("Machine: %d CPUs (%s), GOMAXPROCS %d, %s %s/%s; %s on loopback, shared with the client.\n\n",
		runtime.NumCPU(), cpu, runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH, redisVersion)
}

// runStores measures every row at every concurrency, -passes times, and
// prints one table per concurrency.
func runStores(concs []int, ops, passes int, only, addr string, flushDelay time.Duration) error {
	srv, err := redisFor(addr)
	if err != nil {
		return err
	}
	defer srv.stop()
	c, err := newClients(srv.addr, flushDelay)
	if err != nil {
		return err
	}
	defer c.close()
	rows, err := c.rows()
	if err != nil {
		return err
	}
	if only != "" {
		kept := rows[:1] // the baseline stays, for the ratios
		for _, r := range rows[1:] {
			if strings.Contains(r.name, only) {
				kept = append(kept, r)
			}
		}
		rows = kept
	}
	// got[conc][row] lists one cell per pass.
	got := make(map[int][][]cell)
	for _, n := range concs {
		got[n] = make([][]cell, len(rows))
	}
	for pass := range passes {
		for _, n := range concs {
			calls := ops
			if n == 1 {
				calls = max(ops/4, 1)
			}
			for i, r := range rows {
				ids, keys := keysFor(pass, r.name, n, calls)
				cl, err := measure(n, calls, r.op(ids, keys))
				if err != nil {
					return fmt.Errorf("%s at %d: %w", r.name, n, err)
				}
				got[n][i] = append(got[n][i], cl)
				fmt.Fprintf(os.Stderr, "pass %d, %d callers: %-48s %8.0f ops/s\n", pass+1, n, r.name, cl.opsPerSec)
			}
		}
	}
	for _, n := range concs {
		printTable(n, rows, got[n])
	}
	return nil
}
