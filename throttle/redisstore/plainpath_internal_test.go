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

// TestRefusalRate: the estimate rises with refusals past the point where
// the pipeline takes over, falls back below it with grants, and after a run
// of grants settles at exactly 0, where observing more grants writes
// nothing.
func TestRefusalRate(t *testing.T) {
	var r refusalRate
	if r.frequent() {
		t.Fatal("a new estimate says refusals are frequent")
	}
	for range 3 {
		r.observe(true)
	}
	if !r.frequent() {
		t.Fatalf("3 refusals in a row: rate %d/%d, below the pipeline's %d", r.v.Load(), rateOne, rateFrequent)
	}
	for range 1000 {
		r.observe(true)
	}
	if v := r.v.Load(); v <= rateOne*15/16 || v > rateOne {
		t.Fatalf("after 1000 refusals the rate is %d/%d, want nearly all", v, rateOne)
	}
	grants := 0
	for r.frequent() {
		r.observe(false)
		grants++
	}
	// From nearly 1 to below 1/8 at 15/16 per grant: ln 8 / ln(16/15).
	if grants < 30 || grants > 34 {
		t.Fatalf("%d grants brought refusals back below frequent, want about 32", grants)
	}
	for range 1000 {
		r.observe(false)
	}
	if v := r.v.Load(); v != 0 {
		t.Fatalf("after 1000 grants the rate is %d, want 0", v)
	}
}

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
