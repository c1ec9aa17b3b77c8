package redistest_test

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/go-throttle/throttle/internal/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, redistest.IgnoreResolver()...) }

func TestStartStopRestart(t *testing.T) {
	srv := redistest.Start(t, "--maxmemory", "8mb")
	c := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	// The extra argument reached the server.
	cfg, err := c.ConfigGet(ctx, "maxmemory").Result()
	if err != nil || cfg["maxmemory"] != "8388608" {
		t.Fatalf("maxmemory = %v, %v; want 8388608", cfg, err)
	}
	// Persistence is off.
	if cfg, _ := c.ConfigGet(ctx, "save").Result(); cfg["save"] != "" {
		t.Fatalf("save = %q, want empty", cfg["save"])
	}

	srv.Stop(t)
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING succeeded after Stop")
	}

	srv.Restart(t)
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after Restart: %v", err)
	}
	if n, _ := c.Exists(ctx, "k").Result(); n != 0 {
		t.Fatalf("key survived a restart without persistence")
	}

	srv.Kill(t)
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING succeeded after Kill")
	}
	srv.Restart(t)
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after second Restart: %v", err)
	}
}

func TestServersAreIsolated(t *testing.T) {
	a, b := redistest.Start(t), redistest.Start(t)
	if a.Addr == b.Addr {
		t.Fatalf("two servers share %s", a.Addr)
	}
	ctx := context.Background()
	if err := a.Client(t).Set(ctx, "k", "a", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := b.Client(t).Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Fatalf("key leaked between servers: %d, %v", n, err)
	}
}

// TestRestartAfterKillIsEmpty proves that Restart comes back empty even
// when the data was saved to an RDB file: each run has its own data
// directory, so the new process has nothing to load.
func TestRestartAfterKillIsEmpty(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	addr := srv.Addr

	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	// An explicit SAVE writes dump.rdb even with --save "".
	if err := c.Save(ctx).Err(); err != nil {
		t.Fatalf("SAVE: %v", err)
	}
	srv.Kill(t)
	if srv.Running() {
		t.Fatal("Running() = true after Kill")
	}
	srv.Restart(t)
	if !srv.Running() {
		t.Fatal("Running() = false after Restart")
	}
	if srv.Addr != addr {
		t.Fatalf("Addr changed across Restart: %s, then %s", addr, srv.Addr)
	}
	n, err := c.DBSize(ctx).Result()
	if err != nil || n != 0 {
		t.Fatalf("DBSIZE after Kill and Restart = %d, %v; want 0 (the saved RDB must not be loaded)", n, err)
	}
}

// TestPauseResume proves that a paused server accepts connections but
// answers nothing (a client's command ends at its deadline with a timeout,
// not a connection error), and that on Resume it executes what was sent
// while it was paused, even by a caller that gave up.
func TestPauseResume(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}

	srv.Pause(t)
	srv.Pause(t) // a second Pause does nothing
	if !srv.Running() {
		t.Fatal("Running() = false while paused")
	}
	short, cancelShort := context.WithTimeout(ctx, 100*time.Millisecond)
	err := c.Set(short, "k", "v", 0).Err()
	cancelShort()
	if !isTimeout(err) {
		t.Fatalf("SET on a paused server: %v; want a timeout", err)
	}

	srv.Resume(t)
	srv.Resume(t) // a second Resume does nothing
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after Resume: %v", err)
	}
	// The SET that timed out was buffered by the kernel and runs now.
	for {
		v, err := c.Get(ctx, "k").Result()
		if err == nil && v == "v" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("GET k after Resume = %q, %v; want the SET sent while paused to have run", v, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPauseNotRunning proves that Pause refuses a stopped server instead of
// signalling nothing and letting the test believe Redis is hung.
func TestPauseNotRunning(t *testing.T) {
	srv := redistest.Start(t)
	srv.Stop(t)
	ft := &fatalRecorder{TB: t}
	func() {
		defer func() { _ = recover() }()
		srv.Pause(ft)
	}()
	if !ft.failed {
		t.Fatal("Pause on a stopped server did not fail the test")
	}
}

// TestCleanupStopsPausedServer proves that the test's cleanup stops a
// server left paused (SIGTERM alone would stay pending for ever).
func TestCleanupStopsPausedServer(t *testing.T) {
	var srv *redistest.Server
	t.Run("paused", func(t *testing.T) {
		srv = redistest.Start(t)
		srv.Pause(t)
	})
	if srv.Running() {
		t.Fatal("server still running after its test's cleanup")
	}
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING succeeded after cleanup")
	}
}

// isTimeout reports whether err is a deadline error (the context's or the
// socket's), as opposed to a connection error.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout())
}

// fatalRecorder records Fatal calls and stops the calling function with a
// panic (caught by the test) instead of ending the real test.
type fatalRecorder struct {
	testing.TB
	failed bool
}

func (f *fatalRecorder) Fatalf(string, ...any) { f.failed = true; panic("Fatalf") }
func (f *fatalRecorder) Fatal(...any)          { f.failed = true; panic("Fatal") }
func (f *fatalRecorder) Helper()               {}
