package throttle_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
)

func failOverLimiter(t *testing.T, mode throttle.Mode) (*throttle.Limiter, *switchStore) {
	t.Helper()
	primary := &switchStore{Store: memstore.New()}
	l := newLimiter(t, primary, throttle.Policy{Name: "fo", Mode: mode, Window: time.Minute,
		WhenStoreFails: throttle.FailOver, Fallback: memstore.New()})
	return l, primary
}

// TestFailOverSwitchesOnEvidence: one failed call does not send every key to
// the fallback; three in a row do, until a probe finds the store back.
func TestFailOverSwitchesOnEvidence(t *testing.T) {
	ctx := context.Background()
	l, primary := failOverLimiter(t, throttle.Dedupe)

	primary.down.Store(true)
	if lease, err := l.Admit(ctx, "a"); lease == nil || err != nil {
		t.Fatalf("first request during the outage: %v %v", lease, err)
	}
	if _, err := l.Admit(ctx, "a"); !errors.Is(err, throttle.ErrContended) {
		t.Fatalf("the fallback should still turn duplicates away, got %v", err)
	}
	primary.down.Store(false)
	calls := primary.calls.Load()
	if lease, err := l.Admit(ctx, "b"); lease == nil || err != nil {
		t.Fatalf("after one failure: %v %v", lease, err)
	}
	if primary.calls.Load() == calls {
		t.Fatal("one failure sent the next request to the fallback without asking the store")
	}

	primary.down.Store(true)
	for i := range 3 {
		l.Admit(ctx, "fail-"+string(rune('0'+i)))
	}
	calls = primary.calls.Load()
	l.Admit(ctx, "skipped")
	if primary.calls.Load() != calls {
		t.Fatal("after three failures in a row the store was still asked within the probe interval")
	}

	primary.down.Store(false)
	deadline := time.Now().Add(5 * time.Second)
	for primary.calls.Load() == calls {
		if time.Now().After(deadline) {
			t.Fatal("the limiter never probed the store again")
		}
		l.Admit(ctx, "probe-"+time.Now().String())
		time.Sleep(50 * time.Millisecond)
	}
	before := primary.calls.Load()
	if lease, _ := l.Admit(ctx, "c"); lease == nil {
		t.Fatal("no lease after recovery")
	}
	if primary.calls.Load() == before {
		t.Fatal("requests did not go back to the store after it recovered")
	}
	if s := l.Stats(); s.Fallback < 2 || s.StoreErrors < 4 {
		t.Fatalf("stats %+v", s)
	}
}

// TestFailOverOneHolderPerProcess: within one process, FailOver never
// grants a key that a live lease of the Limiter holds, whichever store that
// lease came from.
func TestFailOverOneHolderPerProcess(t *testing.T) {
	ctx := context.Background()
	t.Run("held in the store, then the store fails", func(t *testing.T) {
		l, primary := failOverLimiter(t, throttle.Exclusive)
		lease, err := l.Acquire(ctx, "job")
		if err != nil {
			t.Fatal(err)
		}
		primary.down.Store(true)
		if l2, err := l.Acquire(ctx, "job"); !errors.Is(err, throttle.ErrContended) {
			t.Fatalf("the fallback granted a key a live lease holds: %v %v", l2, err)
		}
		primary.down.Store(false)
		if err := lease.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if l3, err := l.Acquire(ctx, "job"); err != nil {
			t.Fatalf("after release: %v", err)
		} else {
			_ = l3.Release(ctx)
		}
	})
	t.Run("held in the fallback, then the store is back", func(t *testing.T) {
		l, primary := failOverLimiter(t, throttle.Exclusive)
		primary.down.Store(true)
		lease, err := l.Acquire(ctx, "job")
		if err != nil {
			t.Fatal(err)
		}
		primary.down.Store(false)
		for range 5 { // whatever the store's health state
			if l2, err := l.Acquire(ctx, "job"); !errors.Is(err, throttle.ErrContended) {
				t.Fatalf("the store granted a key a live fallback lease holds: %v %v", l2, err)
			}
		}
		if err := lease.Release(ctx); err != nil {
			t.Fatal(err)
		}
		l3, err := l.Acquire(ctx, "job")
		if err != nil {
			t.Fatalf("after release: %v", err)
		}
		_ = l3.Release(ctx)
	})
	t.Run("concurrent, store flapping", func(t *testing.T) {
		l, primary := failOverLimiter(t, throttle.Exclusive)
		var mu sync.Mutex
		holders := 0
		var wg sync.WaitGroup
		stop := make(chan struct{})
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					primary.down.Store(!primary.down.Load())
					time.Sleep(time.Millisecond)
				}
			}
		})
		var workers sync.WaitGroup
		for range 8 {
			workers.Go(func() {
				for range 200 {
					lease, err := l.Acquire(ctx, "hot")
					if err != nil {
						continue
					}
					mu.Lock()
					holders++
					if holders > 1 {
						mu.Unlock()
						t.Error("two live leases of one key in one process")
						return
					}
					mu.Unlock()
					time.Sleep(50 * time.Microsecond)
					mu.Lock()
					holders--
					mu.Unlock()
					_ = lease.Release(ctx)
				}
			})
		}
		workers.Wait()
		close(stop)
		wg.Wait()
	})
}

// lostReply applies every acquisition to its store and then reports an
// error, as a Redis does whose reply was lost or came after the timeout.
type lostReply struct{ throttle.Store }

func (s lostReply) Acquire(ctx context.Context, req store.Request) (store.Grant, error) {
	if _, err := s.Store.Acquire(ctx, req); err != nil {
		return store.Grant{}, err
	}
	return store.Grant{}, errReplyLost
}

var errReplyLost = errors.New("reply lost")

// TestAmbiguousAcquireIsReleased: an acquisition whose outcome is unknown
// does not leave a lock that nobody owns: the Limiter releases its own token
// in the background.
func TestAmbiguousAcquireIsReleased(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []throttle.Mode{throttle.Dedupe, throttle.Exclusive} {
		t.Run(mode.String(), func(t *testing.T) {
			inner := memstore.New()
			l := newLimiter(t, lostReply{inner}, throttle.Policy{Name: "amb", Mode: mode, Window: time.Minute})
			if _, err := l.Acquire(ctx, "u"); !errors.Is(err, throttle.ErrStore) {
				t.Fatalf("Acquire = %v, want ErrStore", err)
			}
			key := l.StoredKey("u")
			waitFree(t, inner, key)
		})
	}
}

// waitFree waits until a newcomer can take key in st.
func waitFree(t *testing.T, st throttle.Store, key string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		g, err := st.Acquire(context.Background(), store.Request{Key: key, Token: store.NewToken(), TTL: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if g.Acquired {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("key %s is still held by a token nobody owns (%v left)", key, g.Remaining)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// slowReply answers after a delay, as a store does that took longer than
// the lease's validity.
type slowReply struct {
	throttle.Store
	delay time.Duration
}

func (s slowReply) Acquire(ctx context.Context, req store.Request) (store.Grant, error) {
	time.Sleep(s.delay)
	return s.Store.Acquire(ctx, req)
}

// TestNoWorkOnSpentValidity: Do and an Exclusive acquisition never start
// work on a grant whose validity ran out before it arrived.
func TestNoWorkOnSpentValidity(t *testing.T) {
	ctx := context.Background()
	inner := memstore.New()
	l := newLimiter(t, slowReply{inner, 20 * time.Millisecond}, throttle.Policy{Name: "late",
		Mode: throttle.Exclusive, LeaseTTL: 10 * time.Millisecond, Timeout: time.Second})
	ran := false
	err := l.Do(ctx, "job", func(context.Context) error { ran = true; return nil })
	if ran || !errors.Is(err, throttle.ErrStore) {
		t.Fatalf("Do ran the work (%v) or returned %v, want ErrStore", ran, err)
	}
	waitFree(t, inner, l.StoredKey("job"))
}

// watchBlocks is a Notifier whose Watch never confirms, like a Redis whose
// Pub/Sub connection hangs; it records the deadline it was given.
type watchBlocks struct {
	throttle.Store
	mu       sync.Mutex
	deadline time.Time
}

func (s *watchBlocks) Watch(ctx context.Context, key string) (<-chan struct{}, func(), error) {
	s.mu.Lock()
	s.deadline, _ = ctx.Deadline()
	s.mu.Unlock()
	<-ctx.Done()
	return nil, nil, ctx.Err()
}

// TestWaitBoundsTheWatch: Policy.Wait bounds the whole wait, setting up the
// release notification included.
func TestWaitBoundsTheWatch(t *testing.T) {
	ctx := context.Background()
	st := &watchBlocks{Store: memstore.New()}
	const wait = 50 * time.Millisecond
	l := newLimiter(t, st, throttle.Policy{Name: "w", Window: time.Minute, Wait: wait, Timeout: time.Second})
	if _, err := l.Acquire(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := l.Acquire(ctx, "k"); !errors.Is(err, throttle.ErrContended) {
		t.Fatalf("second Acquire = %v, want ErrContended", err)
	}
	st.mu.Lock()
	dl := st.deadline
	st.mu.Unlock()
	// The deadline is computed from the acquisition's own start, a few
	// microseconds after ours: allow for that, far below Policy.Timeout.
	if dl.IsZero() || dl.Sub(start) > wait+wait/2 {
		t.Fatalf("Watch got deadline %v after the start, want Policy.Wait %v (Timeout is 1s)", dl.Sub(start), wait)
	}
}

// TestStoreRecoveryLogged: when the store answers again after failing, the
// policy's logger says so once.
func TestStoreRecoveryLogged(t *testing.T) {
	ctx := context.Background()
	var buf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &buf, mu: &mu}, nil))
	primary := &switchStore{Store: memstore.New()}
	l := newLimiter(t, primary, throttle.Policy{Name: "rec", Logger: logger})
	primary.down.Store(true)
	l.Admit(ctx, "a")
	l.Admit(ctx, "b")
	primary.down.Store(false)
	l.Admit(ctx, "c")
	l.Admit(ctx, "d")
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	if n := strings.Count(out, "store answers again"); n != 1 {
		t.Fatalf("recovery logged %d times, want 1:\n%s", n, out)
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}
