package throttle_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/internal/faultproxy"
	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/redisstore"
)

// replayPolicy is a Replay policy whose waits are woken by notifications
// only: its backoff sleeps an hour, so a waiter that is not told of a
// record or a release runs into its Wait instead.
func replayPolicy(name string, wait time.Duration) throttle.Policy {
	return throttle.Policy{Name: name, Mode: throttle.Replay, Window: time.Minute, Wait: wait,
		Backoff: func(int) time.Duration { return time.Hour }}
}

// TestClaim walks a key through its life: the first claim holds it, a
// duplicate finds it held with no record yet, then the record, and a
// release frees it with its record.
func TestClaim(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			l := newLimiter(t, b.store, replayPolicy("claim", -1))
			lease, rec, err := l.Claim(ctx, "u")
			if err != nil || lease == nil || rec != nil {
				t.Fatalf("first claim: %v %q %v", lease, rec, err)
			}
			_, _, err = l.Claim(ctx, "u")
			isOnly(t, err, throttle.ErrContended)

			if err := lease.Record(ctx, []byte("answer")); err != nil {
				t.Fatalf("record: %v", err)
			}
			for range 2 {
				dup, rec, err := l.Claim(ctx, "u")
				if err != nil || dup != nil || string(rec) != "answer" {
					t.Fatalf("duplicate: %v %q %v", dup, rec, err)
				}
			}
			// Another identity has nothing to do with it.
			other, rec, err := l.Claim(ctx, "v")
			if err != nil || other == nil || rec != nil {
				t.Fatalf("other identity: %v %q %v", other, rec, err)
			}
			_ = other.Release(ctx)

			if err := lease.Release(ctx); err != nil {
				t.Fatalf("release: %v", err)
			}
			if err := lease.Record(ctx, []byte("late")); !errors.Is(err, throttle.ErrNotHeld) {
				t.Fatalf("record after release: %v, want ErrNotHeld", err)
			}
			next, rec, err := l.Claim(ctx, "u")
			if err != nil || next == nil || rec != nil {
				t.Fatalf("claim after release: %v %q %v (the record must go with the key)", next, rec, err)
			}
			_ = next.Release(ctx)
		})
	}
}

// TestClaimEmptyRecord: an empty record is a record, not "none yet".
func TestClaimEmptyRecord(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			l := newLimiter(t, b.store, replayPolicy("empty", -1))
			lease, _, err := l.Claim(ctx, "u")
			if err != nil {
				t.Fatal(err)
			}
			defer lease.Release(ctx)
			if err := lease.Record(ctx, nil); err != nil {
				t.Fatal(err)
			}
			_, rec, err := l.Claim(ctx, "u")
			if err != nil || rec == nil || len(rec) != 0 {
				t.Fatalf("duplicate: %q (nil %v) %v, want an empty record", rec, rec == nil, err)
			}
		})
	}
}

// TestClaimWokenByRecord: a duplicate waiting for an original in flight is
// woken by the record itself. Its backoff sleeps an hour, so without the
// store's notification it would run into its Wait and get ErrContended.
func TestClaimWokenByRecord(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			l := newLimiter(t, b.store, replayPolicy("woken", 15*time.Second))
			lease, _, err := l.Claim(ctx, "u")
			if err != nil {
				t.Fatal(err)
			}
			defer lease.Release(ctx)
			type answer struct {
				rec []byte
				err error
			}
			got := make(chan answer, 1)
			go func() {
				_, rec, err := l.Claim(ctx, "u")
				got <- answer{rec, err}
			}()
			time.Sleep(100 * time.Millisecond) // let it start waiting (either way it must get the record)
			if err := lease.Record(ctx, []byte("order 7")); err != nil {
				t.Fatal(err)
			}
			a := <-got
			if a.err != nil || string(a.rec) != "order 7" {
				t.Fatalf("waiting duplicate: %q %v, want the record", a.rec, a.err)
			}
		})
	}
}

// TestClaimOneRerunsAfterFailure: the original releases (it failed) while
// ten duplicates wait; exactly one of them gets the key, and the other nine
// get the record it writes.
func TestClaimOneRerunsAfterFailure(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			l := newLimiter(t, b.store, replayPolicy("rerun", 15*time.Second))
			first, _, err := l.Claim(ctx, "u")
			if err != nil {
				t.Fatal(err)
			}
			const n = 10
			var (
				mu     sync.Mutex
				leases int
				recs   [][]byte
				errs   []error
				wg     sync.WaitGroup
			)
			for range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					lease, rec, err := l.Claim(ctx, "u")
					if lease != nil {
						// The rerun: it succeeds this time, and keeps
						// the key for the window, as Replay does.
						if err := lease.Record(ctx, []byte("second run")); err != nil {
							t.Error(err)
						}
					}
					mu.Lock()
					defer mu.Unlock()
					switch {
					case lease != nil:
						leases++
					case err != nil:
						errs = append(errs, err)
					default:
						recs = append(recs, rec)
					}
				}()
			}
			time.Sleep(100 * time.Millisecond) // let them start waiting
			if err := first.Release(ctx); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			if leases != 1 || len(recs) != n-1 || len(errs) != 0 {
				t.Fatalf("%d leases, %d records, errors %v; want 1 lease and %d records", leases, len(recs), errs, n-1)
			}
			for _, r := range recs {
				if !bytes.Equal(r, []byte("second run")) {
					t.Fatalf("record %q", r)
				}
			}
		})
	}
}

// TestClaimWaitBounds: the wait ends with ErrContended at Policy.Wait, and
// with the context's error when that ends first.
func TestClaimWaitBounds(t *testing.T) {
	ctx := context.Background()
	l := newLimiter(t, memstore.New(), replayPolicy("bounds", 50*time.Millisecond))
	lease, _, err := l.Claim(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release(ctx)
	_, _, err = l.Claim(ctx, "u")
	isOnly(t, err, throttle.ErrContended)

	l = newLimiter(t, memstore.New(), replayPolicy("bounds2", time.Hour))
	lease2, _, err := l.Claim(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	defer lease2.Release(ctx)
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, _, err = l.Claim(cctx, "u")
	isOnly(t, err, context.DeadlineExceeded)
}

// noRecords hides a store's Recorder.
type noRecords struct{ throttle.Store }

// TestReplayPolicy checks what New accepts of a Replay policy.
func TestReplayPolicy(t *testing.T) {
	mem := memstore.New()
	l := newLimiter(t, mem, throttle.Policy{Name: "r", Mode: throttle.Replay})
	p := l.Policy()
	if p.Wait != throttle.DefaultReplayWait || p.WhenStoreFails != throttle.FailClosed || p.TTL() != throttle.DefaultWindow {
		t.Fatalf("defaults: wait %v, fail %v, ttl %v", p.Wait, p.WhenStoreFails, p.TTL())
	}
	if p.Mode.String() != "replay" {
		t.Fatalf("mode %q", p.Mode)
	}
	newLimiter(t, mem, throttle.Policy{Name: "r", Mode: throttle.Replay, Wait: -1}) // no wait
	for name, c := range map[string]struct {
		st throttle.Store
		p  throttle.Policy
	}{
		"no recorder":          {noRecords{mem}, throttle.Policy{Name: "r", Mode: throttle.Replay}},
		"fallback no recorder": {mem, throttle.Policy{Name: "r", Mode: throttle.Replay, WhenStoreFails: throttle.FailOver, Fallback: noRecords{memstore.New()}}},
		"reentrant":            {mem, throttle.Policy{Name: "r", Mode: throttle.Replay, Reentrant: true}},
		"negative wait dedupe": {mem, throttle.Policy{Name: "r", Wait: -1}},
	} {
		if _, err := throttle.New(c.st, c.p); !errors.Is(err, throttle.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	_, _, err := newLimiter(t, mem, throttle.Policy{Name: "d"}).Claim(context.Background(), "u")
	isOnly(t, err, throttle.ErrInvalid)
}

// TestClaimStoreFaults produces faults against a real Redis and checks
// Replay's promise: it fails closed by default (a retried order must not
// run unguarded), a record that cannot be written leaves the key held with
// nothing to replay (the duplicate waits and gets ErrContended, never a
// second run and never another answer), and a Redis that loses its data
// loses the record with the lock: the next request runs afresh.
func TestClaimStoreFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("needs redis-server")
	}
	ctx := context.Background()
	srv := redistest.Start(t)
	proxy := faultproxy.Start(t, srv.Addr)
	client := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	st := redisstore.New(client)
	t.Cleanup(func() { _ = st.Close() })
	p := replayPolicy("faults", -1)
	p.Timeout = 100 * time.Millisecond
	p.Logger = quiet
	l := newLimiter(t, st, p)

	// Fail closed: nothing runs while Redis does not answer.
	proxy.SetBlackHole(true)
	lease, rec, err := l.Claim(ctx, "a")
	isOnly(t, err, throttle.ErrStore)
	if lease != nil || rec != nil {
		t.Fatalf("black hole: lease %v, record %q", lease, rec)
	}
	proxy.Clear()

	// The record is lost on the way: the key stays held, unanswered.
	lease, _, err = l.Claim(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	proxy.SetBlackHole(true)
	if err := lease.Record(ctx, []byte("ok")); !errors.Is(err, throttle.ErrStore) {
		t.Fatalf("record through a black hole: %v, want ErrStore", err)
	}
	proxy.Clear()
	dup, rec, err := l.Claim(ctx, "b")
	isOnly(t, err, throttle.ErrContended)
	if dup != nil || rec != nil {
		t.Fatalf("after a lost record: lease %v, record %q", dup, rec)
	}

	// A recorded answer is replayed only to its own key.
	lease, _, err = l.Claim(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Record(ctx, []byte("c's order")); err != nil {
		t.Fatal(err)
	}
	if other, rec, err := l.Claim(ctx, "d"); err != nil || other == nil || rec != nil {
		t.Fatalf("another key: %v %q %v", other, rec, err)
	}

	// Redis restarts empty: the record is gone with the lock.
	srv.Kill(t)
	_, _, err = l.Claim(ctx, "c")
	isOnly(t, err, throttle.ErrStore)
	srv.Restart(t)
	if !waitFor(10*time.Second, func() bool {
		next, rec, err := l.Claim(ctx, "c")
		if err == nil && (next == nil || rec != nil) {
			t.Fatalf("after the restart: lease %v, record %q", next, rec)
		}
		return err == nil
	}) {
		t.Fatal("the store did not come back")
	}
}
