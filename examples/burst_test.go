package examples_test

import (
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/redistest"
)

// burstClient is a client that opens a connection per concurrent request,
// as a load generator (hey -c N) does: a burst of N copies is N new
// connections arriving at once, not a few reused ones.
func burstClient(t *testing.T, conns int) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: 0, DisableKeepAlives: false}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// loadCPU keeps processor 0 busy with two spinning processes until the
// test ends, and returns the wrapper that runs a command on that processor
// only (taskset), or nil where taskset is missing: the bursts below must
// hold on a loaded machine too, where a process waits for the CPU far
// longer than a store timeout. The processes are killed by PID.
func loadCPU(t *testing.T) []string {
	taskset, err := exec.LookPath("taskset")
	var wrapper []string
	if err == nil {
		wrapper = []string{taskset, "-c", "0"}
	}
	for range 2 {
		argv := slices.Concat(wrapper, []string{"sh", "-c", "while :; do :; done"})
		cmd := exec.Command(argv[0], argv[1:]...)
		setDeathSignal(cmd)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	return wrapper
}

// fire sends n copies of the request mk builds at once (all goroutines
// start together) and returns the replies. A copy that got no answer at
// all is sent again, up to three times after growing pauses, as a client
// would.
func fire(n int, mk func(i int) *http.Request, c *http.Client) []reply {
	replies := make([]reply, n)
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := mk(i)
			<-gate
			replies[i] = do(c, req)
			for pause := 50 * time.Millisecond; replies[i].status == 0 && pause <= time.Second &&
				(req.Body == nil || req.GetBody != nil); pause *= 4 {
				// The copy never got an answer (a connection the loaded
				// kernel or client dropped): send it again, as a client
				// does; an idempotent request is what this guards.
				time.Sleep(pause)
				again := req.Clone(req.Context())
				if req.GetBody != nil {
					again.Body, _ = req.GetBody()
				}
				replies[i] = do(c, again)
			}
		}()
	}
	close(gate)
	wg.Wait()
	return replies
}

// transportErrors counts the replies that got no answer by their error.
func transportErrors(rs []reply) map[string]int {
	errs := map[string]int{}
	for _, r := range rs {
		if r.status == 0 && r.err != nil {
			errs[r.err.Error()]++
		}
	}
	return errs
}

// statusCounts counts replies by status (0 for a transport error).
func statusCounts(rs []reply) map[int]int {
	m := map[int]int{}
	for _, r := range rs {
		m[r.status]++
	}
	return m
}

// TestColdStartBurst is issue 27's first case: four examples freshly
// started on one healthy Redis (with the default policies: Dedupe fails
// open on an outage) get 600 identical POST /submit of one user at once,
// 200 each, on an idle and on a loaded machine. A store that answers,
// however slowly, is not down: exactly one copy is admitted and none gets
// a 5xx.
func TestColdStartBurst(t *testing.T) {
	skipUnlessProcesses(t)
	srv := redistest.Start(t)
	const perApp = 200
	for round := range 4 {
		t.Run(fmt.Sprint("round", round), func(t *testing.T) {
			// A window longer than any burst: on a loaded machine the 800
			// copies can take longer than the default 5 s to arrive, and a
			// copy after the window is a new submission, rightly admitted.
			args := []string{"-redis", srv.Addr, "-window", "1m"}
			var wrapper []string
			if round%2 == 1 {
				wrapper = loadCPU(t)
			}
			apps := []*app{startWrapped(t, wrapper, "nethttp", args...), startWrapped(t, wrapper, "gin", args...),
				startWrapped(t, wrapper, "echo", args...), startWrapped(t, wrapper, "fiber", args...)}
			c := burstClient(t, len(apps)*perApp)
			user := fmt.Sprintf("burst-%d-%d", round, time.Now().UnixNano())
			rs := fire(len(apps)*perApp, func(i int) *http.Request {
				a := apps[i%len(apps)]
				req, _ := http.NewRequest(http.MethodPost, a.url+"/submit", strings.NewReader(`{"order":1}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-User-ID", user)
				return req
			}, c)
			counts := statusCounts(rs)
			ok := 0
			for st, n := range counts {
				if st/100 == 2 {
					ok += n
				}
				assert.Less(t, st, 500, "%d copies answered %d", n, st)
				assert.NotZero(t, st, "%d copies failed in transport", n)
			}
			assert.Equal(t, 1, ok, "copies admitted; statuses %v", counts)
			assert.Equal(t, len(rs)-1, counts[http.StatusTooManyRequests], "statuses %v", counts)
		})
	}
}

// TestDuplicateStorm is issue 27's second case: 2000 concurrent POST
// /orders of one user with one Idempotency-Key and one body on a warm
// example over a healthy Redis, on a loaded machine: every copy gets the
// order's 201, one order is placed.
func TestDuplicateStorm(t *testing.T) {
	skipUnlessProcesses(t)
	srv := redistest.Start(t)
	a := startApp(t, "nethttp", "-redis", srv.Addr)
	const copies = 2000
	c := burstClient(t, copies)
	healthz(t, c, a)
	loadCPU(t)
	user := fmt.Sprintf("storm-%d", time.Now().UnixNano())
	rs := fire(copies, func(int) *http.Request {
		req, _ := http.NewRequest(http.MethodPost, a.url+"/orders", strings.NewReader(`{"item":"storm","qty":1}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-User-ID", user)
		req.Header.Set("Idempotency-Key", `"storm-key"`)
		return req
	}, c)
	counts := statusCounts(rs)
	require.Equal(t, copies, counts[http.StatusCreated], "statuses %v; transport errors %v", counts, transportErrors(rs))
	bodies := map[string]int{}
	for _, r := range rs {
		bodies[r.body]++
	}
	assert.Len(t, bodies, 1, "one order, every copy answered with its body")
}
