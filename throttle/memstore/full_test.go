package memstore

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

func TestFullStoreRefusesNewKeys(t *testing.T) {
	clk := newFakeClock()
	// One policy may fill the store here (see TestFloodOfOnePolicy for
	// the default share).
	s := New(WithClock(clk.Now), WithMaxKeys(4), WithPolicyShare(1))
	for i := range 4 {
		acquire(t, s, "k"+strconv.Itoa(i), "t", time.Second)
	}
	_, err := s.Acquire(bg, store.Request{Key: "new", Token: "t", TTL: time.Second})
	if !errors.Is(err, ErrFull) {
		t.Fatalf("Acquire of a fifth key: %v, want ErrFull", err)
	}
	// Held keys still answer as usual.
	if g := acquire(t, s, "k0", "other", time.Second); g.Acquired || g.Remaining != time.Second {
		t.Fatalf("contender on a full store: %+v, want refused", g)
	}
	outcome(t, store.OK)(s.Extend(bg, "k1", "t", time.Minute))

	outcome(t, store.OK)(s.Release(bg, "k0", "t"))
	if g := acquire(t, s, "new", "t", time.Second); !g.Acquired {
		t.Fatal("a released slot was not reused")
	}
	// Once the locks expired, a full shard sweeps them.
	clk.Advance(time.Second)
	for i := range 3 {
		if g := acquire(t, s, "later"+strconv.Itoa(i), "t", time.Second); !g.Acquired {
			t.Fatalf("key %d after expiry was refused", i)
		}
	}
	// k1 was extended to a minute and still counts.
	if _, err := s.Acquire(bg, store.Request{Key: "one-too-many", Token: "t", TTL: time.Second}); !errors.Is(err, ErrFull) {
		t.Fatalf("fifth live key: %v, want ErrFull", err)
	}
	if locks, _, _ := s.counts(); locks != 4 {
		t.Fatalf("%d locks stored, want the bound 4", locks)
	}
}

func TestFullStoreIsAStoreErrorForTheLimiter(t *testing.T) {
	s := New(WithMaxKeys(1))
	l, err := throttle.New(s, throttle.Policy{Name: "full", WhenStoreFails: throttle.FailClosed})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(bg, "a"); err != nil {
		t.Fatal(err)
	}
	_, err = l.Acquire(bg, "b")
	if !errors.Is(err, throttle.ErrStore) || !errors.Is(err, ErrFull) {
		t.Fatalf("Acquire on a full store: %v, want a store error wrapping ErrFull", err)
	}
	if lease, err := l.Admit(bg, "c"); lease != nil || !errors.Is(err, throttle.ErrStore) {
		t.Fatalf("Admit on a full store under FailClosed: %v, want a store error", err)
	}
}

func TestMaxKeysAcrossShards(t *testing.T) {
	const max = 1 << 12
	s := New(WithMaxKeys(max), WithPolicyShare(1)) // the keys are of one policy
	full := 0
	for i := range 2 * max {
		_, err := s.Acquire(context.Background(), store.Request{Key: strconv.Itoa(i), Token: "t", TTL: time.Hour})
		if errors.Is(err, ErrFull) {
			full++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	locks, _, _ := s.counts()
	// The bound is split over the shards, so the store may refuse a
	// little before max; it never holds more.
	if locks > max || locks < max*3/4 || full != 2*max-locks {
		t.Fatalf("stored %d locks and refused %d of %d with bound %d", locks, full, 2*max, max)
	}
}

// logBuffer collects a Limiter's log lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *logBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *logBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// fullLimiter returns a Limiter on a store bounded to 16 keys (one shard),
// which its one policy may fill (WithPolicyShare(1)), with the 16 keys
// "held0".."held15" admitted and their leases, and the log it writes to.
// (With the default share the policy's half is full after 8 keys: the same
// answers for it, see TestFloodOfOnePolicy.)
func fullLimiter(t *testing.T, p throttle.Policy) (*throttle.Limiter, []*throttle.Lease, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	p.Logger = slog.New(slog.NewTextHandler(logs, nil))
	l, err := throttle.New(New(WithMaxKeys(16), WithPolicyShare(1)), p)
	if err != nil {
		t.Fatal(err)
	}
	var leases []*throttle.Lease
	for i := range 16 {
		lease, err := l.Admit(bg, "held"+strconv.Itoa(i))
		if lease == nil || err != nil {
			t.Fatalf("Admit(held%d) before the store is full: %v, %v", i, lease, err)
		}
		leases = append(leases, lease)
	}
	t.Cleanup(func() {
		for _, lease := range leases {
			lease.Release(bg)
		}
	})
	return l, leases, logs
}

// flood admits 100 distinct ids that do not fit, as an attacker would send,
// and checks each answer with check.
func flood(t *testing.T, l *throttle.Limiter, check func(*throttle.Lease, error) bool) {
	t.Helper()
	for i := range 100 {
		lease, err := l.Admit(bg, "flood"+strconv.Itoa(i))
		if !check(lease, err) {
			t.Fatalf("Admit(flood%d) on a full store: %v, %v", i, lease, err)
		}
		if lease != nil {
			lease.Release(bg)
		}
	}
}

// stillHeld checks that every held key still turns its duplicates away.
func stillHeld(t *testing.T, l *throttle.Limiter) {
	t.Helper()
	for i := range 16 {
		if lease, err := l.Admit(bg, "held"+strconv.Itoa(i)); lease != nil || !errors.Is(err, throttle.ErrContended) {
			t.Fatalf("duplicate of held%d on a full store: %v, %v; want ErrContended", i, lease, err)
		}
	}
}

// TestFullStoreFailsOpenByDefault: for Dedupe and Cooldown, a full store is
// a store failure that the default WhenStoreFails lets through unguarded,
// logged and counted in Stats.FailedOpen, while the held keys stay held.
func TestFullStoreFailsOpenByDefault(t *testing.T) {
	for _, mode := range []throttle.Mode{throttle.Dedupe, throttle.Cooldown} {
		t.Run(mode.String(), func(t *testing.T) {
			l, _, logs := fullLimiter(t, throttle.Policy{Name: "submit", Mode: mode, Window: time.Minute})
			flood(t, l, func(lease *throttle.Lease, err error) bool { return lease == nil && err == nil })
			if s := l.Stats(); s.FailedOpen != 100 || s.StoreErrors != 100 {
				t.Fatalf("stats %+v, want 100 failed open of 100 store errors", s)
			}
			if out := logs.String(); !strings.Contains(out, "store error") || !strings.Contains(out, ErrFull.Error()) {
				t.Fatalf("log %q, want the store error logged", out)
			}
			stillHeld(t, l)
		})
	}
}

// TestFullStoreFailsClosedForExclusive: for Exclusive, the default
// WhenStoreFails turns the request away with a store error.
func TestFullStoreFailsClosedForExclusive(t *testing.T) {
	l, _, _ := fullLimiter(t, throttle.Policy{Name: "sync", Mode: throttle.Exclusive})
	flood(t, l, func(lease *throttle.Lease, err error) bool {
		return lease == nil && errors.Is(err, throttle.ErrStore) && errors.Is(err, ErrFull)
	})
	if s := l.Stats(); s.FailedOpen != 0 || s.StoreErrors != 100 {
		t.Fatalf("stats %+v, want 100 store errors, none failed open", s)
	}
	stillHeld(t, l)
}

// TestFullStoreFailsOver: under FailOver a full store hands the request to
// the fallback store, which grants it, and the held keys stay held.
func TestFullStoreFailsOver(t *testing.T) {
	l, _, _ := fullLimiter(t, throttle.Policy{Name: "submit", Window: time.Minute,
		WhenStoreFails: throttle.FailOver, Fallback: New()})
	flood(t, l, func(lease *throttle.Lease, err error) bool { return lease != nil && err == nil })
	if s := l.Stats(); s.FailedOpen != 0 || s.Fallback != 100 {
		t.Fatalf("stats %+v, want 100 acquisitions granted by the fallback", s)
	}
	stillHeld(t, l)
}

// TestFullStoreKeepsHeldKeys: at the store itself, a flood of new keys into a
// full store evicts no live lock, plain, reentrant or fenced.
func TestFullStoreKeepsHeldKeys(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now), WithMaxKeys(16), WithPolicyShare(1))
	for i := range 16 {
		req := store.Request{Key: "held" + strconv.Itoa(i), Token: "owner", TTL: time.Minute,
			Reentrant: i%2 == 1, Fence: i%3 == 0}
		if g, err := s.Acquire(bg, req); err != nil || !g.Acquired {
			t.Fatalf("Acquire(%+v): %+v, %v", req, g, err)
		}
	}
	for i := range 1000 {
		clk.Advance(time.Millisecond) // 1s in all, well within the TTL
		_, err := s.Acquire(bg, store.Request{Key: "flood" + strconv.Itoa(i), Token: "t", TTL: time.Minute, Fence: i%2 == 0})
		if !errors.Is(err, ErrFull) || !errors.Is(err, store.ErrNotApplied) {
			t.Fatalf("flood key %d: %v, want ErrFull (not applied)", i, err)
		}
	}
	for i := range 16 {
		key := "held" + strconv.Itoa(i)
		if g := acquire(t, s, key, "attacker", time.Minute); g.Acquired || g.Remaining != time.Minute-time.Second {
			t.Fatalf("%s after the flood: %+v, want still held for 59s", key, g)
		}
		outcome(t, store.OK)(s.Release(bg, key, "owner"))
	}
}
