// Command overloadbench is issue 39's acceptance benchmark: GET
// /api/report of DESIGN.md §6 (four slots, 50 ms of work each: 80 requests
// a second), driven open loop at 0.8×, 2× and 5× its capacity, behind each
// guard of cases.go in turn, in one run on one machine. It prints Markdown
// tables: goodput as a share of capacity, the 200s' p99 against the
// unloaded p99, what was shed, and how long each adaptive limit took to
// come back after the overload.
//
// Goodput is the rate of good answers (200s within 10× the unloaded
// median of their arrival) completed during the steady part of a phase,
// from a second after it began to its end, whatever phase they arrived in,
// over that window's length. Counted by arrival instead (the old column,
// still printed), a guard that keeps a standing queue gets credit for the
// backlog it answers after the phase ended, and can reach more than 100%
// of capacity on a short phase; by completion, it gets credit only for
// what its service did while the load held, and the backlog it carries in
// from the phase before counts only if answered in time. The p99 is of the
// 200s of requests that arrived in the phase.
//
//	cd internal/overloadbench && go run .                  # every case, 30 s phases: about 13 minutes
//	cd internal/overloadbench && go run . -phase 3s -recovery 12s   # a smoke run
//
// It lives in a module of its own, so that failsafe-go never enters the
// root go.mod.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

func main() {
	phaseLen := flag.Duration("phase", 30*time.Second, "length of the 0.8×, 2× and 5× phases")
	recovery := flag.Duration("recovery", 15*time.Second, "length of the 0.8× phase after each overload")
	timeout := flag.Duration("timeout", time.Second, "how long a client waits before it gives up")
	only := flag.String("only", "", "comma-separated cases to run (default: all)")
	flag.Parse()

	fmt.Printf("overloadbench: %s, GOMAXPROCS %d, %s/%s; phases %v, recovery %v, client timeout %v\n\n",
		runtime.Version(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, *phaseLen, *recovery, *timeout)

	// The unloaded latency: a quarter of capacity, no guard.
	cal := run(cases[0], []phase{{"unloaded", 0.25, max(*phaseLen, 10*time.Second)}}, *timeout)
	base := latencies(cal.answers, 0)
	p50, p99 := quantile(base, 0.50), quantile(base, 0.99)
	fmt.Printf("unloaded (0.25×, no guard): p50 %v, p99 %v; an answer counts as goodput within %v\n\n",
		ms(p50), ms(p99), ms(10*p50))

	phases := []phase{
		{"0.8×", 0.8, *phaseLen},
		{"2×", 2, *phaseLen},
		{"0.8× after 2×", 0.8, *recovery},
		{"5×", 5, *phaseLen},
		{"0.8× after 5×", 0.8, *recovery},
	}
	var results []result
	for _, c := range cases {
		if *only != "" && !slices.Contains(strings.Split(*only, ","), c.name) {
			continue
		}
		fmt.Fprintf(os.Stderr, "running %s…\n", c.name)
		results = append(results, run(c, phases, *timeout))
	}
	printTables(results, phases, p50, p99)
}

// A result is a case's answers and the samples of its limit.
type result struct {
	c       guardCase
	answers []answer
	starts  []time.Time
	limits  *limits
}

// run serves the report handler behind c on a fresh loopback server and
// drives it through phases.
func run(c guardCase, phases []phase, timeout time.Duration) result {
	h, limit := c.make(report())
	mux := http.NewServeMux()
	mux.Handle("GET /api/report", h)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	tr := &http.Transport{MaxIdleConnsPerHost: 4096, IdleConnTimeout: time.Minute, DisableCompression: true}
	client := &http.Client{Transport: tr}
	var lim *limits
	if limit != nil {
		lim = sampleLimit(limit, 50*time.Millisecond)
	}
	answers, starts := drive(client, "http://"+ln.Addr().String()+"/api/report", phases, timeout)
	if lim != nil {
		lim.stop()
	}
	tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
	time.Sleep(time.Second) // let the machine settle between cases
	return result{c: c, answers: answers, starts: starts, limits: lim}
}
