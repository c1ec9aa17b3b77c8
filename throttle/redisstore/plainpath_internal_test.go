package redisstore

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/throttle/store"
)

// TestTTLArgs: the boxed argument of a TTL is made once and then reused
// without allocating, for up to ttlArgsMax TTLs; beyond them every TTL is
// still right, boxed per call; concurrent use is safe (run with -race).
func TestTTLArgs(t *testing.T) {
	var a ttlArgs
	for ms := range int64(256) {
		if got := a.arg(ms); got != any(ms) {
			t.Fatalf("arg(%d) = %v", ms, got)
		}
	}
	if a.list.Load() != nil {
		t.Fatal("small TTLs, which box without allocating, were cached")
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 1000 {
				ms := int64(10_000 + (g*1000+i)%(2*ttlArgsMax))
				if got := a.arg(ms); got != any(ms) {
					t.Errorf("arg(%d) = %v", ms, got)
					return
				}
			}
		})
	}
	wg.Wait()
	list := *a.list.Load()
	if len(list) != ttlArgsMax {
		t.Fatalf("%d TTLs cached, want the first %d", len(list), ttlArgsMax)
	}
	cached := list[0].ms
	if n := testing.AllocsPerRun(100, func() { _ = a.arg(cached) }); n != 0 {
		t.Fatalf("a cached TTL allocates %v times per call", n)
	}
	if got := a.arg(1 << 40); got != any(int64(1<<40)) {
		t.Fatalf("arg beyond the cache = %v", got)
	}
}

// TestRefusedErrorsNotMarked: an acquisition's SET that never reached Redis
// is marked store.ErrNotApplied, but a failed follow-up of a refused SET
// is not, even when it never left either: the refused SET may have been
// go-redis's retry of one that took the key, which the Limiter must then
// free.
func TestRefusedErrorsNotMarked(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	_ = c.Close()
	s := New(c, WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	req := store.Request{Key: "k", Token: "t", TTL: time.Second}
	if _, err := s.acquireSet(ctx, req); !errors.Is(err, store.ErrNotApplied) || !errors.Is(err, redis.ErrClosed) {
		t.Fatalf("SET on a closed client: %v; want it marked store.ErrNotApplied", err)
	}
	if _, err := s.refused(ctx, req); err == nil || errors.Is(err, store.ErrNotApplied) || !errors.Is(err, redis.ErrClosed) {
		t.Fatalf("follow-up on a closed client: %v; want redis.ErrClosed, not marked store.ErrNotApplied", err)
	}
}

// TestRecordAndChannel: the record key and release channel that Release
// builds in one string are store.RecordKey's and channel's.
func TestRecordAndChannel(t *testing.T) {
	for _, key := range []string{"k", store.Key("p", "n", "id"), "", "{x}:record"} {
		rec, ch := recordAndChannel(key)
		if rec != store.RecordKey(key) || ch != channel(key) {
			t.Errorf("recordAndChannel(%q) = %q, %q; want %q, %q", key, rec, ch, store.RecordKey(key), channel(key))
		}
	}
}
