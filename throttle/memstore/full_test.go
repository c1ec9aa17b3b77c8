package memstore

import (
	"bytes"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

func TestFullStoreRefusesNewKeys(t *testing.T) {
	clk := newFakeClock()
	// One policy may fill the store here (see TestFloodOfOnePolicy for
	// the default share).
	s := New(WithClock(clk.Now), WithMaxKeys(4))
	for i := range 4 {
		acquire(t, s, "k"+strconv.Itoa(i), "t", time.Second)
	}
	_, err := s.Acquire(bg, store.Request{Key: "new", Token: "t", TTL: time.Second})
	require.ErrorIs(t, err, errFull, "Acquire of a fifth key")
	// Held keys still answer as usual.
	require.Equal(t, store.Grant{Remaining: time.Second}, acquire(t, s, "k0", "other", time.Second),
		"a contender on a full store")
	outcome(t, store.OK)(s.Extend(bg, "k1", "t", time.Minute))

	outcome(t, store.OK)(s.Release(bg, "k0", "t"))
	require.True(t, acquire(t, s, "new", "t", time.Second).Acquired, "a released slot is reused")
	// Once the locks expired, a full shard sweeps them.
	clk.Advance(time.Second)
	for i := range 3 {
		require.True(t, acquire(t, s, "later"+strconv.Itoa(i), "t", time.Second).Acquired, "key %d after expiry", i)
	}
	// k1 was extended to a minute and still counts.
	_, err = s.Acquire(bg, store.Request{Key: "one-too-many", Token: "t", TTL: time.Second})
	require.ErrorIs(t, err, errFull, "fifth live key")
	locks, _, _ := s.counts()
	require.Equal(t, 4, locks, "locks stored, the bound")
}

func TestFullStoreIsAStoreErrorForTheLimiter(t *testing.T) {
	s := New(WithMaxKeys(1))
	l, err := throttle.NewLock(s, throttle.LockConfig{Name: "full", Options: throttle.Options{WhenStoreFails: throttle.FailClosed}})
	require.NoError(t, err)
	_, err = l.Acquire(bg, "a")
	require.NoError(t, err)
	_, err = l.Acquire(bg, "b")
	require.ErrorIs(t, err, throttle.ErrStore, "Acquire on a full store")
	require.ErrorIs(t, err, errFull, "Acquire on a full store")
	require.ErrorIs(t, err, store.ErrFull, "Acquire on a full store")
	lease, err := l.Admit(bg, "c")
	require.ErrorIs(t, err, throttle.ErrStore, "Admit on a full store under FailClosed")
	require.Nil(t, lease)
	require.Zero(t, l.Stats().StoreErrors, "a full store counted as failing")
}

func TestMaxKeysAcrossShards(t *testing.T) {
	const max = 1 << 12
	s := New(WithMaxKeys(max)) // the keys are of one policy
	full := 0
	for i := range 2 * max {
		_, err := s.Acquire(bg, store.Request{Key: strconv.Itoa(i), Token: "t", TTL: time.Hour})
		if errors.Is(err, errFull) {
			full++
		} else {
			require.NoError(t, err)
		}
	}
	locks, _, _ := s.counts()
	// The bound is split over the shards, so the store may refuse a
	// little before max; it never holds more.
	require.LessOrEqual(t, locks, max)
	require.GreaterOrEqual(t, locks, max*3/4)
	require.Equal(t, 2*max-locks, full)
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
// which its one policy fills, with the 16 keys "held0".."held15" admitted
// and their leases, and the log it writes to.
func fullLimiter(t *testing.T, p throttle.LockConfig) (*throttle.Lock, []*throttle.Lease, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	p.Logger = slog.New(slog.NewTextHandler(logs, nil))
	l, err := throttle.NewLock(New(WithMaxKeys(16)), p)
	require.NoError(t, err)
	var leases []*throttle.Lease
	for i := range 16 {
		lease, err := l.Admit(bg, "held"+strconv.Itoa(i))
		require.NoError(t, err, "Admit(held%d) before the store is full", i)
		require.NotNil(t, lease, "Admit(held%d) before the store is full", i)
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
func flood(t *testing.T, l *throttle.Lock, check func(*throttle.Lease, error) bool) {
	t.Helper()
	for i := range 100 {
		lease, err := l.Admit(bg, "flood"+strconv.Itoa(i))
		require.True(t, check(lease, err), "Admit(flood%d) on a full store: %v, %v", i, lease, err)
		if lease != nil {
			lease.Release(bg)
		}
	}
}

// stillHeld checks that every held key still turns its duplicates away.
func stillHeld(t *testing.T, l *throttle.Lock) {
	t.Helper()
	for i := range 16 {
		lease, err := l.Admit(bg, "held"+strconv.Itoa(i))
		require.ErrorIs(t, err, throttle.ErrContended, "duplicate of held%d on a full store", i)
		require.Nil(t, lease)
	}
}

// TestFullStoreIsLoad (issue 36): a full store is load, not an outage:
// whatever WhenStoreFails says, each request it has no room for is turned
// away (never let through unguarded, never handed to the Fallback) with an
// error matching store.ErrFull, counted in Stats.Full and not as a store
// error, and logged with the policy's name; the held keys stay held.
// Before, Dedupe and Cooldown failed open and FailOver granted from the
// Fallback.
func TestFullStoreIsLoad(t *testing.T) {
	for _, tc := range []struct {
		mode throttle.Mode
		fail throttle.FailMode
	}{{throttle.Dedupe, 0}, {throttle.Cooldown, 0}, {throttle.Exclusive, 0},
		{throttle.Dedupe, throttle.FailOpen}, {throttle.Dedupe, throttle.FailClosed}, {throttle.Dedupe, throttle.FailOver}} {
		t.Run(tc.mode.String()+"-"+strconv.Itoa(int(tc.fail)), func(t *testing.T) {
			p := throttle.LockConfig{Name: "submit", Mode: tc.mode, Options: throttle.Options{WhenStoreFails: tc.fail}}
			if tc.mode != throttle.Exclusive {
				p.TTL = time.Minute
			}
			if tc.fail == throttle.FailOver {
				p.Fallback = New()
			}
			l, _, logs := fullLimiter(t, p)
			flood(t, l, func(lease *throttle.Lease, err error) bool {
				return lease == nil && errors.Is(err, store.ErrFull) && errors.Is(err, throttle.ErrStore)
			})
			s := l.Stats()
			require.Equal(t, uint64(100), s.Full, "%+v", s)
			require.Zero(t, s.FailedOpen+s.StoreErrors+s.Fallback+s.Acquired-16, "%+v", s)
			require.Contains(t, logs.String(), "the store is full")
			require.Contains(t, logs.String(), "policy=submit")
			require.Equal(t, 1, strings.Count(logs.String(), "the store is full"), "one line a second")
			stillHeld(t, l)
		})
	}
}

// TestFullStoreKeepsHeldKeys: at the store itself, a flood of new keys into a
// full store evicts no live lock, plain, reentrant or fenced.
func TestFullStoreKeepsHeldKeys(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now), WithMaxKeys(16))
	for i := range 16 {
		req := store.Request{Key: "held" + strconv.Itoa(i), Token: "owner", TTL: time.Minute,
			Reentrant: i%2 == 1, Fence: i%3 == 0}
		g, err := s.Acquire(bg, req)
		require.NoError(t, err)
		require.True(t, g.Acquired, "Acquire(%+v)", req)
	}
	for i := range 1000 {
		clk.Advance(time.Millisecond) // 1s in all, well within the TTL
		_, err := s.Acquire(bg, store.Request{Key: "flood" + strconv.Itoa(i), Token: "t", TTL: time.Minute, Fence: i%2 == 0})
		require.ErrorIs(t, err, errFull, "flood key %d", i)
		require.ErrorIs(t, err, store.ErrNotApplied, "flood key %d", i)
	}
	for i := range 16 {
		key := "held" + strconv.Itoa(i)
		require.Equal(t, store.Grant{Remaining: time.Minute - time.Second}, acquire(t, s, key, "attacker", time.Minute),
			"%s after the flood", key)
		outcome(t, store.OK)(s.Release(bg, key, "owner"))
	}
}
