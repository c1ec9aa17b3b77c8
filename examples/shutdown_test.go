package examples_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-throttle/throttle/examples/internal/demo"
)

// TestShutdownWithStalledClients stops each example with SIGTERM while
// only idle and stalled clients are connected: a keep-alive connection
// between requests, one stalled in its header, and two stalled in their
// body, on a handler that reads it (a form submission) and on one that does
// not (a JSON submission, which net/http still reads to the end, to discard
// it, before it answers). The two in their body are admitted by the
// middleware, as GET /metrics shows, before the signal is sent. The
// server's read timeouts cut the stalled ones off, so the example exits
// with status 0 before its shutdown grace is over, rather than waiting for
// them for the whole grace and failing.
func TestShutdownWithStalledClients(t *testing.T) {
	skipUnlessProcesses(t)
	t.Parallel()
	c := newClient(t)
	for _, name := range exampleNames {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := startApp(t, name)
			host := strings.TrimPrefix(a.url, "http://")
			dial := func(send string) *bufio.Reader {
				conn, err := net.DialTimeout("tcp", host, 10*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = conn.Close() })
				if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
					t.Fatal(err)
				}
				if _, err := io.WriteString(conn, send); err != nil {
					t.Fatal(err)
				}
				return bufio.NewReader(conn)
			}

			dial("POST /submit HTTP/1.1\r\nHost: example\r\nX-User-ID: in-header\r\n")
			dial("POST /submit HTTP/1.1\r\nHost: example\r\nX-User-ID: in-form\r\n" +
				"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\norder=1&fai")
			dial("POST /submit HTTP/1.1\r\nHost: example\r\nX-User-ID: in-json\r\n" +
				"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"order\":")
			idle := dial("GET /healthz HTTP/1.1\r\nHost: example\r\n\r\n")
			resp, err := http.ReadResponse(idle, nil)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("%s GET /healthz on the idle connection: %v %v", name, resp, err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			// Wait for the middleware to admit both submissions stalled in
			// their body: their handlers are then running, or done and
			// waiting for the rest of the body. fiber (fasthttp, and its
			// adaptor under net/http) reads a request's whole body before
			// any handler runs, so there they stay stalled before it.
			admitted := 2.0
			if name == "fiber" {
				admitted = 0
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				_, samples := scrape(t, c, a)
				if by, _ := requests(samples); by["submit/admitted"] >= admitted {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s did not admit the two stalled submissions within 10s", name)
				}
				time.Sleep(10 * time.Millisecond)
			}

			sent := time.Now()
			a.stop(t, syscall.SIGTERM) // requires exit status 0
			if took := time.Since(sent); took >= demo.ShutdownGrace {
				t.Errorf("%s took %v to shut down with only idle and stalled clients, the whole grace period (%v)", name, took, demo.ShutdownGrace)
			}
		})
	}
}
