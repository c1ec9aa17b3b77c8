package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/internal/storekit"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if buildDir != "" {
			_ = os.RemoveAll(buildDir)
		}
		os.Exit(code)
	}))
}

// lineRE is the output contract of DESIGN.md section 6.
var lineRE = regexp.MustCompile(`^(\S+) worker=(\S+) customer=(c[0-9]+) event=(start|done|skipped|lost) fence=([0-9]+)$`)

type event struct {
	at       time.Time
	worker   string
	customer string
	kind     string
	fence    int64
}

func parseLine(t *testing.T, line string) event {
	t.Helper()
	m := lineRE.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("line %q does not follow the output contract", line)
	}
	at, err := time.Parse(time.RFC3339Nano, m[1])
	if err != nil {
		t.Fatalf("line %q: time: %v", line, err)
	}
	if len(m[1]) != len("2006-01-02T15:04:05.000000000Z") {
		t.Fatalf("line %q: time without nanoseconds", line)
	}
	fence, _ := strconv.ParseInt(m[5], 10, 64)
	e := event{at: at, worker: m[2], customer: m[3], kind: m[4], fence: fence}
	if (e.kind == "skipped") != (e.fence == 0) {
		t.Fatalf("line %q: fence must be 0 exactly for skipped", line)
	}
	return e
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildDir  string
)

// build compiles the worker once per test binary.
func build(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "worker-test-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(buildDir, "worker")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// proc is a running worker whose output lines are collected.
type proc struct {
	cmd    *exec.Cmd
	stderr lockedBuffer
	lines  chan string

	waitOnce sync.Once
	rest     []string
	code     int
}

// lockedBuffer is a bytes.Buffer the process writes to while the test reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func startWorker(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(build(t), args...), lines: make(chan string, 1000)}
	p.cmd.Stderr = &p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		p.wait()
	})
	return p
}

// wait collects every remaining line and the exit code. Later calls return
// the same.
func (p *proc) wait() ([]string, int) {
	p.waitOnce.Do(func() {
		for l := range p.lines {
			p.rest = append(p.rest, l)
		}
		err := p.cmd.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			p.code = ee.ExitCode()
		default:
			p.code = -1
		}
	})
	return p.rest, p.code
}

// next returns the next line, failing the test after limit.
func (p *proc) next(t *testing.T, limit time.Duration) string {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			t.Fatalf("worker exited early; stderr:\n%s", p.stderr.String())
		}
		return l
	case <-time.After(limit):
		t.Fatalf("no output within %v", limit)
	}
	return ""
}

// TestWorkersShareCustomers runs three workers against one Redis: each
// customer is synced by exactly one of them, the others skip it, every
// sync outlives its lease three times over thanks to the refresher, and no
// lease is lost. The lease is 2 s, not the default 1 s: a refresh every
// third of it then has more than a second of slack, which a loaded
// machine's scheduling once exceeded.
func TestWorkersShareCustomers(t *testing.T) {
	srv := redistest.Start(t)
	const workers, customers = 3, 10
	procs := make([]*proc, workers)
	for i := range procs {
		procs[i] = startWorker(t, "-redis", srv.Addr, "-id", "w"+strconv.Itoa(i+1),
			"-customers", strconv.Itoa(customers), "-work", "6s", "-ttl", "2s")
	}
	var all []event
	for i, p := range procs {
		lines, code := p.wait()
		if code != 0 {
			t.Fatalf("worker %d exited %d; stderr:\n%s", i+1, code, p.stderr.String())
		}
		for _, l := range lines {
			all = append(all, parseLine(t, l))
		}
	}
	starts := map[string]event{}
	perWorker := map[string]int{}
	for _, e := range all {
		switch e.kind {
		case "lost":
			t.Errorf("lease lost: %+v", e)
		case "start":
			if prev, dup := starts[e.customer]; dup {
				t.Errorf("%s started twice: by %s and %s", e.customer, prev.worker, e.worker)
			}
			starts[e.customer] = e
			perWorker[e.worker]++
		}
	}
	if len(starts) != customers {
		t.Fatalf("%d customers started, want %d", len(starts), customers)
	}
	for _, e := range all {
		if e.kind != "done" {
			continue
		}
		s := starts[e.customer]
		if s.worker != e.worker || s.fence != e.fence {
			t.Errorf("done %+v does not match start %+v", e, s)
		}
		if took := e.at.Sub(s.at); took < 3*time.Second {
			t.Errorf("%s done after %v, before its 3s of work", e.customer, took)
		}
	}
	// Each worker reports every customer once: started (and done) or skipped.
	for w := 1; w <= workers; w++ {
		id := "w" + strconv.Itoa(w)
		seen := map[string]int{}
		for _, e := range all {
			if e.worker == id && e.kind != "done" {
				seen[e.customer]++
			}
		}
		if len(seen) != customers {
			t.Errorf("%s reported %d customers, want %d", id, len(seen), customers)
		}
		for c, n := range seen {
			if n != 1 {
				t.Errorf("%s reported %s %d times", id, c, n)
			}
		}
	}
	t.Logf("syncs per worker: %v", perWorker)
}

// TestWorkerRoundsFence runs one worker for several rounds: every customer
// is synced once per round, and its fences strictly increase.
func TestWorkerRoundsFence(t *testing.T) {
	srv := redistest.Start(t)
	p := startWorker(t, "-redis", srv.Addr, "-id", "solo", "-customers", "3", "-rounds", "3",
		"-work", "2400ms", "-ttl", "2s") // a lease the refresher must keep alive, with room for a loaded machine
	lines, code := p.wait()
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.stderr.String())
	}
	fences := map[string][]int64{}
	for _, l := range lines {
		e := parseLine(t, l)
		if e.kind == "lost" || e.kind == "skipped" {
			t.Fatalf("unexpected %s; stderr:\n%s", l, p.stderr.String())
		}
		if e.kind == "start" {
			fences[e.customer] = append(fences[e.customer], e.fence)
		}
	}
	for _, c := range []string{"c1", "c2", "c3"} {
		f := fences[c]
		if len(f) != 3 {
			t.Fatalf("%s started %d times in 3 rounds", c, len(f))
		}
		for i := 1; i < len(f); i++ {
			if f[i] <= f[i-1] {
				t.Fatalf("%s fences %v not strictly increasing", c, f)
			}
		}
	}
}

// TestWorkerReportsLostLease deletes a customer's key while it is synced:
// the worker reports lost for it, done for the others, and exits 0.
func TestWorkerReportsLostLease(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	p := startWorker(t, "-redis", srv.Addr, "-id", "w", "-customers", "2", "-work", "3s", "-ttl", "300ms")
	for range 2 {
		if e := parseLine(t, p.next(t, 10*time.Second)); e.kind != "start" {
			t.Fatalf("want start, got %+v", e)
		}
	}
	if err := rdb.Del(context.Background(), storekit.Key("throttle", "sync", "c2")).Err(); err != nil {
		t.Fatal(err)
	}
	lines, code := p.wait()
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.stderr.String())
	}
	got := map[string]string{}
	for _, l := range lines {
		e := parseLine(t, l)
		got[e.customer] = e.kind
	}
	if got["c1"] != "done" || got["c2"] != "lost" {
		t.Fatalf("final events %v, want c1 done and c2 lost", got)
	}
}

// TestWorkerInterrupted sends SIGINT during long syncs: the worker exits 0
// soon and leaves no lock behind.
func TestWorkerInterrupted(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	p := startWorker(t, "-redis", srv.Addr, "-customers", "3", "-work", "1h")
	for range 3 {
		p.next(t, 10*time.Second)
	}
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	exited := make(chan int, 1)
	go func() { _, code := p.wait(); exited <- code }()
	select {
	case code := <-exited:
		if code != 0 {
			t.Fatalf("exit %d after SIGINT; stderr:\n%s", code, p.stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("worker still running 10s after SIGINT")
	}
	for _, c := range []string{"c1", "c2", "c3"} {
		if n := rdb.Exists(context.Background(), storekit.Key("throttle", "sync", c)).Val(); n != 0 {
			t.Fatalf("lock of %s left behind after SIGINT", c)
		}
	}
}

// TestWorkerBadFlags checks that bad input is refused with status 2 and a
// message, before anything connects anywhere.
func TestWorkerBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-redis", "127.0.0.1:1", "-customers", "0"},
		{"-redis", "127.0.0.1:1", "-customers", "100001"},
		{"-redis", "127.0.0.1:1", "-ttl", "1ms"},
		{"-redis", "127.0.0.1:1", "-work", "-1s"},
		{"-redis", "127.0.0.1:1", "-rounds", "0"},
		{"-redis", "127.0.0.1:1", "-id", "has space"},
		{"-redis", "127.0.0.1:1", "-id", "a=b"},
		{"-redis", "127.0.0.1:1", "extra"},
		{"-nosuchflag"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, &stdout, &stderr); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
		if stdout.Len() != 0 || stderr.Len() == 0 {
			t.Errorf("%q: stdout %q, stderr %q; want only an error message", args, stdout.String(), stderr.String())
		}
	}
}

// TestWorkerRedisDown checks the exit status when Redis cannot be reached.
func TestWorkerRedisDown(t *testing.T) {
	srv := redistest.Start(t)
	addr := srv.Addr
	srv.Stop(t)
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"-redis", addr}, &stdout, &stderr); code != 1 {
		t.Fatalf("exit %d, want 1; stderr %q", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "cannot reach Redis") {
		t.Fatalf("stderr %q does not say what is wrong", stderr.String())
	}
}
