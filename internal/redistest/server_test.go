package redistest_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-throttle/throttle/internal/redistest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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
