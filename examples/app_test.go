package examples_test

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// binDir holds the example binaries, built once per test run by binary.
var (
	binDir   string
	buildMu  sync.Mutex
	buildErr error
	built    bool
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "throttle-examples-")
	if err != nil {
		panic(err)
	}
	binDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// binary returns the path of the named example's binary, building the four
// examples with one go build the first time it is called.
func binary(t *testing.T, name string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if !built {
		built = true
		goBin, err := exec.LookPath("go")
		if err != nil {
			buildErr = err
		} else {
			cmd := exec.Command(goBin, "build", "-o", binDir+string(filepath.Separator),
				"./nethttp", "./gin", "./echo", "./fiber", "./grpc")
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = &buildError{err: err, out: string(out)}
			}
		}
	}
	if buildErr != nil {
		t.Fatalf("building the examples: %v", buildErr)
	}
	exe := filepath.Join(binDir, name)
	if runtime.GOOS == "windows" {
		exe += ".exe"
	}
	return exe
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// app is one running example process.
type app struct {
	name string
	cmd  *exec.Cmd
	url  string // "http://127.0.0.1:port"

	mu  sync.Mutex
	log strings.Builder // stdout and stderr, for failure messages

	exited chan struct{} // closed once the process has exited
	err    error         // cmd.Wait's result, set before exited is closed
}

// listening matches the slog line an example writes once it listens.
var listening = regexp.MustCompile(`msg=listening addr=(\S+)`)

// startApp runs the named example on a free loopback port (-addr
// 127.0.0.1:0; the port is read from its "listening" log line) with extra
// args, and kills it by PID at cleanup if it is still running.
func startApp(t *testing.T, name string, args ...string) *app {
	t.Helper()
	return startWrapped(t, nil, name, args...)
}

// startWrapped is startApp with the example's command line run by wrapper
// (such as taskset -c 0) when it is not empty.
func startWrapped(t *testing.T, wrapper []string, name string, args ...string) *app {
	t.Helper()
	a := &app{name: name, exited: make(chan struct{})}
	argv := slices.Concat(wrapper, []string{binary(t, name), "-addr", "127.0.0.1:0"}, args)
	a.cmd = exec.Command(argv[0], argv[1:]...)
	a.cmd.Stdout = logWriter{a}
	setDeathSignal(a.cmd)
	stderr, err := a.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}

	addrc := make(chan string, 1)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			a.write(line + "\n")
			if m := listening.FindStringSubmatch(line); m != nil {
				select {
				case addrc <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr) // a line too long for the scanner
	}()
	go func() {
		<-readDone
		a.err = a.cmd.Wait()
		close(a.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-a.exited:
		default:
			_ = a.cmd.Process.Kill()
			<-a.exited
		}
		if t.Failed() {
			t.Logf("%s (pid %d) output:\n%s", name, a.cmd.Process.Pid, a.output())
		}
	})

	select {
	case addr := <-addrc:
		a.url = "http://" + addr
	case <-a.exited:
		t.Fatalf("%s exited before listening (%v):\n%s", name, a.err, a.output())
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not listen within 30s:\n%s", name, a.output())
	}
	return a
}

func (a *app) write(s string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.log.WriteString(s)
}

func (a *app) output() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.log.String()
}

type logWriter struct{ a *app }

func (w logWriter) Write(p []byte) (int, error) {
	w.a.write(string(p))
	return len(p), nil
}

// stop sends sig and requires the process to exit with status 0 within a
// generous bound.
func (a *app) stop(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := a.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %s: %v", a.name, err)
	}
	select {
	case <-a.exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not exit within 20s of %v", a.name, sig)
	}
	if a.err != nil {
		t.Errorf("%s exited with %v after %v, want status 0", a.name, a.err, sig)
	}
}

// skipUnlessProcesses skips tests that run the examples as processes in
// -short mode and where signals cannot be sent.
func skipUnlessProcesses(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the example binaries: skipped in -short mode")
	}
	if runtime.GOOS == "windows" {
		t.Skip("needs SIGTERM")
	}
}
