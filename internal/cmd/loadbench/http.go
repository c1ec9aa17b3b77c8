package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// runHTTP builds the nethttp example, starts it on the memory store and on
// a private Redis, and drives it over HTTP/1.1 keep-alive connections with
// -ops requests per cell: GET /healthz (a bare handler, unguarded, on the
// same server: the floor) and POST /submit (the Dedupe policy) with a new
// X-User-ID per request, so that every submission is admitted.
func runHTTP(concs []int, ops, passes int, addr string) error {
	dir, err := os.MkdirTemp("", "loadbench")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	bin := filepath.Join(dir, "example")
	build := exec.Command("go", "build", "-o", bin, "./examples/nethttp")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building the nethttp example (run loadbench from the module root): %w", err)
	}
	srv, err := redisFor(addr)
	if err != nil {
		return err
	}
	defer srv.stop()

	setups := []struct {
		name string
		args []string
	}{
		{"memory", nil},
		{"Redis (-redis)", []string{"-redis", srv.addr}},
	}
	type line struct {
		name  string
		cells []cell
	}
	got := make(map[int][]*line)
	for si, setup := range setups {
		ex, err := startExample(bin, setup.args)
		if err != nil {
			return err
		}
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}}
		targets := []struct {
			name string
			req  func(user string) (*http.Request, error)
		}{
			{"GET /healthz (bare handler) · " + setup.name, func(string) (*http.Request, error) {
				return http.NewRequest(http.MethodGet, "http://"+ex.addr+"/healthz", nil)
			}},
			{"POST /submit (Dedupe) · " + setup.name, func(user string) (*http.Request, error) {
				r, err := http.NewRequest(http.MethodPost, "http://"+ex.addr+"/submit", strings.NewReader("item=book"))
				if err == nil {
					r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
					r.Header.Set("X-User-ID", user)
				}
				return r, err
			}},
		}
		for pass := range passes {
			for _, n := range concs {
				calls := ops
				if n == 1 {
					calls = max(ops/4, 1)
				}
				for i, tg := range targets {
					var seq atomic.Int64
					prefix := fmt.Sprintf("u%d-%d-%d-", pass, n, time.Now().UnixNano())
					cl, err := measure(n, calls, func() error {
						r, err := tg.req(prefix + strconv.FormatInt(seq.Add(1), 10))
						if err != nil {
							return err
						}
						resp, err := client.Do(r)
						if err != nil {
							return err
						}
						_, _ = io.Copy(io.Discard, resp.Body)
						_ = resp.Body.Close()
						if resp.StatusCode >= 300 {
							return fmt.Errorf("%s: status %d", tg.name, resp.StatusCode)
						}
						return nil
					})
					if err != nil {
						ex.stop()
						return err
					}
					at := len(targets)*si + i
					for len(got[n]) <= at {
						got[n] = append(got[n], nil)
					}
					if got[n][at] == nil {
						got[n][at] = &line{name: tg.name}
					}
					got[n][at].cells = append(got[n][at].cells, cl)
					fmt.Fprintf(os.Stderr, "pass %d, %d clients: %-44s %8.0f req/s\n", pass+1, n, tg.name, cl.opsPerSec)
				}
			}
		}
		client.CloseIdleConnections()
		ex.stop()
	}
	for _, n := range concs {
		fmt.Printf("### HTTP, %d concurrent client%s\n\n", n, plural(n))
		fmt.Println("| what | requests/s | p50 | p99 |")
		fmt.Println("|---|---|---|---|")
		for _, l := range got[n] {
			var ops, p50, p99 span
			for _, c := range l.cells {
				ops.add(c.opsPerSec)
				p50.add(float64(c.p50))
				p99.add(float64(c.p99))
			}
			fmt.Printf("| %s | %s | %s | %s |\n", l.name,
				ops.format(func(v float64) string { return fmt.Sprintf("%.1fk", v/1000) }), p50.format(dur), p99.format(dur))
		}
		fmt.Println()
	}
	return nil
}

// example is a running example server.
type example struct {
	addr string
	cmd  *exec.Cmd
}

// startExample starts the example binary on a free port with args and
// waits until /healthz answers.
func startExample(bin string, args []string) (*example, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	_ = l.Close()
	cmd := exec.Command(bin, append([]string{"-addr", addr}, args...)...)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ex := &example{addr: addr, cmd: cmd}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			_ = resp.Body.Close()
			return ex, nil
		}
		if time.Now().After(deadline) {
			ex.stop()
			return nil, fmt.Errorf("the example with %v does not answer: %w", args, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (e *example) stop() {
	_ = e.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = e.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = e.cmd.Process.Kill()
		<-done
	}
}
