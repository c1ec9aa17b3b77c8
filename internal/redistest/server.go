package redistest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// startTimeout bounds how long Start and Restart wait for PING.
	startTimeout = 10 * time.Second
	// stopTimeout bounds how long Stop waits after SIGTERM before it kills.
	stopTimeout = 10 * time.Second
	// portAttempts is how often Start picks a new port when the server
	// could not bind the one it was given (another process took it between
	// our probe and the server's bind).
	portAttempts = 5
)

// NotFound is the message a test fails with when redis-server is not on PATH.
const NotFound = "redis-server not found: apt-get install redis-server (Debian/Ubuntu) or brew install redis (macOS)"

// Server is one redis-server process owned by a test. Its methods are safe
// for concurrent use, but a test normally drives it from one goroutine.
type Server struct {
	// Addr is the server's "127.0.0.1:port" address. It stays the same
	// across Stop/Kill and Restart, so clients made before a restart
	// reconnect to the new process.
	Addr string

	bin  string
	dir  string
	log  string
	args []string

	mu   sync.Mutex
	proc *process
	runs int // launches so far; each run gets its own data directory
}

// process is one run of redis-server; done is closed once it has exited.
type process struct {
	cmd    *exec.Cmd
	done   chan struct{}
	stderr bytes.Buffer
	paused bool // SIGSTOP sent and not yet undone by SIGCONT; guarded by Server.mu
}

// Start runs a new redis-server on a free 127.0.0.1 port with --save ""
// and --appendonly no (nothing is written to disk), its data directory
// (a fresh one for each run) and log file in t.TempDir(), and args appended
// to the command line (for example "--maxmemory", "1mb"). It returns once
// the server answers PING, and registers a cleanup that stops the server
// (resuming it first if paused) and waits for it to exit.
//
// Start fails the test when redis-server is not installed or does not come
// up within 10 seconds, and skips it under go test -short.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	if testing.Short() {
		t.Skip("redistest: skipping test that needs redis-server in -short mode")
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(NotFound)
	}
	dir := t.TempDir()
	s := &Server{bin: bin, dir: dir, log: filepath.Join(dir, "redis.log"), args: args}
	t.Cleanup(func() { s.stop(syscall.SIGTERM) })

	var lastErr error
	for range portAttempts {
		port, err := freePort()
		if err != nil {
			t.Fatalf("redistest: no free port: %v", err)
		}
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if lastErr = s.launch(); lastErr == nil {
			return s
		}
	}
	t.Fatalf("redistest: %v", lastErr)
	return nil
}

// Client returns a go-redis client for the server, closed at the test's
// cleanup. It reconnects by itself after Restart. Like the clients the
// documentation recommends, it ends calls at their context's deadline
// (ContextTimeoutEnabled).
func (s *Server) Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Stop shuts the server down gracefully (SIGTERM, which with saving off does
// not write anything) and waits for the process to exit; after 10 seconds it
// kills it. Stopping a stopped server does nothing.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	s.stop(syscall.SIGTERM)
}

// Kill kills the server with SIGKILL, as a crash would, and waits for the
// process to exit. Killing a stopped server does nothing.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	s.stop(syscall.SIGKILL)
}

// Pause freezes the server with SIGSTOP, as a long fork, a swapping host or
// a stuck VM would: the kernel still accepts connections and buffers the
// commands sent to it, but nothing is executed or answered, so clients see
// timeouts rather than connection errors. On Linux Pause returns once the
// process is actually stopped. Resume undoes it; a paused server is resumed
// before Stop, Kill, Restart and the test's cleanup stop it (a stopped
// process cannot act on SIGTERM). Pausing a paused server does nothing;
// pausing one that is not running fails the test.
func (s *Server) Pause(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.proc
	if p == nil || p.exited() {
		t.Fatalf("redistest: Pause: redis-server on %s is not running", s.Addr)
	}
	if p.paused {
		return
	}
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("redistest: Pause: %v", err)
	}
	p.paused = true
	waitState(p.cmd.Process.Pid, true, p.done)
}

// Resume continues a paused server with SIGCONT. It then executes and
// answers, in order, whatever its clients sent while it was paused,
// including commands whose callers have since timed out: this is the
// "hung Redis wakes up" case. Resuming a server that is not paused does
// nothing.
func (s *Server) Resume(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.proc; p != nil && p.paused {
		p.resume()
	}
}

// Running reports whether a redis-server process is running for s: true
// after Start and Restart (also while paused), false after Stop or Kill or
// once the process has exited by itself.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil && !s.proc.exited()
}

// Restart starts the server again on the same port and address after Stop
// or Kill (it stops a running one first) and waits until it answers PING.
// It always comes back empty, as after a failover to an empty replica or a
// crash without persistence: saving is off, and each run gets a fresh data
// directory, so not even an RDB written by an explicit SAVE, nor a
// persistence option passed to Start, is loaded again.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.stop(syscall.SIGTERM)
	var err error
	// The port was ours a moment ago; another process may have grabbed
	// it in between, which is rare, so retry briefly before giving up.
	for range portAttempts {
		if err = s.launch(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("redistest: restart: %v", err)
}

// launch starts redis-server on s.Addr and waits for PING. On failure the
// process has exited or been killed.
func (s *Server) launch() error {
	_, port, _ := net.SplitHostPort(s.Addr)
	s.mu.Lock()
	s.runs++
	dir := filepath.Join(s.dir, "run"+strconv.Itoa(s.runs))
	s.mu.Unlock()
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	argv := []string{
		"--port", port,
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", dir,
		"--logfile", s.log,
		"--daemonize", "no",
	}
	argv = append(argv, s.args...)
	p := &process{cmd: exec.Command(s.bin, argv...), done: make(chan struct{})}
	p.cmd.Stderr = &p.stderr
	p.cmd.Stdout = &p.stderr
	setDeathSignal(p.cmd)
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	if err := waitPing(s.Addr, p.done); err != nil {
		p.signal(syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("redis-server on %s: %w; stderr: %q; log tail: %q",
			s.Addr, err, p.stderr.String(), tail(s.log))
	}
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	return nil
}

// stop signals the running process, if any, and waits for it to exit,
// escalating to SIGKILL after stopTimeout. A paused process is continued
// right after the signal, or SIGTERM would stay pending for ever. It
// returns how the process ended, or nil if none was running.
func (s *Server) stop(sig syscall.Signal) *os.ProcessState {
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	if p != nil {
		p.signal(sig)
		if p.paused {
			p.resume()
		}
	}
	s.mu.Unlock()
	if p == nil {
		return nil
	}
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		p.signal(syscall.SIGKILL)
		<-p.done
	}
	return p.cmd.ProcessState
}

func (p *process) signal(sig syscall.Signal) {
	if !p.exited() {
		_ = p.cmd.Process.Signal(sig)
	}
}

// resume sends SIGCONT and waits (on Linux) until the process runs again.
// The caller holds Server.mu.
func (p *process) resume() {
	p.signal(syscall.SIGCONT)
	p.paused = false
	waitState(p.cmd.Process.Pid, false, p.done)
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// freePort asks the kernel for a free loopback port by listening on port 0
// and closing the listener. The port may be taken again before
// redis-server binds it; Start retries with another one in that case.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// errExited reports a server that exited before answering PING, typically
// because it could not bind its port.
var errExited = errors.New("exited before answering PING")

// waitPing sends PING until it gets +PONG, the process exits or
// startTimeout passes. It speaks RESP directly so that no client (and no
// client goroutine) outlives it.
func waitPing(addr string, exited <-chan struct{}) error {
	deadline := time.Now().Add(startTimeout)
	var lastErr error
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return errExited
		default:
		}
		if lastErr = ping(addr); lastErr == nil {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("no PONG within %v: %v", startTimeout, lastErr)
}

func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		// -LOADING or similar: not ready yet.
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

// tail returns the last lines of the log file for failure messages.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
