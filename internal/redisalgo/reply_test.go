package redisalgo

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle/store"
)

// TestMillis: a TTL is rounded up to whole milliseconds and saturates
// instead of overflowing into a negative PX (which Redis refuses, or for
// PEXPIRE takes as "delete now").
func TestMillis(t *testing.T) {
	maxMs := int64(ttlCeiling / time.Millisecond)
	for d, want := range map[time.Duration]int64{
		time.Nanosecond: 1, time.Millisecond: 1, time.Millisecond + 1: 2, 1500 * time.Microsecond: 2,
		time.Minute: 60000, ttlCeiling: maxMs, ttlCeiling - 1: maxMs, ttlCeiling + 1: maxMs,
		time.Duration(math.MaxInt64): maxMs, time.Duration(math.MaxInt64 - 1): maxMs,
	} {
		assert.Equal(t, want, millis(d), "millis(%d)", d)
	}
	assert.Equal(t, ttlCeiling, duration(math.MaxInt64))
}

// TestRemaining: a PTTL is -1 for a key without expiry, at least 1ms
// otherwise, and saturates instead of wrapping around.
func TestRemaining(t *testing.T) {
	for ms, want := range map[int64]time.Duration{
		-1: -1, -2: time.Millisecond, 0: time.Millisecond, 1: time.Millisecond,
		2500: 2500 * time.Millisecond, 1e15: ttlCeiling, math.MaxInt64: ttlCeiling,
	} {
		assert.Equal(t, want, remaining(ms), "remaining(%d)", ms)
	}
}

// TestOutcome: every reply of the scripts decodes, StillHeld only for a
// release, and nothing else does.
func TestOutcome(t *testing.T) {
	for n, want := range map[int64]store.Outcome{1: store.OK, 2: store.HeldByOther, 3: store.Gone} {
		for _, release := range []bool{false, true} {
			got, ok := outcome(n, release)
			assert.True(t, ok)
			assert.Equal(t, want, got)
		}
	}
	got, ok := outcome(4, true)
	assert.True(t, ok)
	assert.Equal(t, store.StillHeld, got)
	for _, n := range []int64{4, 0, 5, -1} {
		_, ok := outcome(n, false)
		assert.False(t, ok, "outcome(%d) accepted for extend or record", n)
	}
}

// TestDecision decodes both signs of the GCRA reply for a quota of 4 per
// second with burst 4 (T = 250 ms, tolerance 1 s).
func TestDecision(t *testing.T) {
	const T = 250000 // µs
	assert.Equal(t, store.Decision{Allowed: true, Remaining: 2, ResetAfter: 500 * time.Millisecond},
		decision(500000, T, 4, 1), "allowed, the TAT 500ms ahead")
	assert.Equal(t, store.Decision{ResetAfter: time.Second, RetryAfter: 250 * time.Millisecond},
		decision(-(1000000+1), T, 4, 1), "refused, the quota empty")
	assert.Equal(t, store.Decision{Remaining: 1, ResetAfter: 750 * time.Millisecond, RetryAfter: 500 * time.Millisecond},
		decision(-(750000+1), T, 4, 3), "a refused cost of 3 with one left")
}

// TestShare: the estimate rises with outcomes past Frequent, falls back
// below it without, and after a run without settles at exactly 0.
func TestShare(t *testing.T) {
	var r Share
	require.False(t, r.Frequent())
	for range 3 {
		r.Observe(true)
	}
	require.True(t, r.Frequent(), "3 outcomes in a row")
	for range 1000 {
		r.Observe(true)
	}
	require.Greater(t, r.v.Load(), int32(shareOne*15/16))
	calls := 0
	for ; r.Frequent(); calls++ {
		r.Observe(false)
	}
	// From nearly 1 to below 1/8 at 15/16 per call: ln 8 / ln(16/15).
	assert.InDelta(t, 32, calls, 2)
	for range 1000 {
		r.Observe(false)
	}
	assert.Zero(t, r.v.Load())
}

// failConn answers every call with err, as a client that cannot reach Redis.
type failConn struct{ err error }

func (f failConn) Eval(context.Context, *Script, []string, ...string) ([]int64, error) {
	return nil, f.err
}

func (f failConn) SetNX(context.Context, string, string, int64, bool) (bool, string, int64, error) {
	return false, "", 0, f.err
}
func (f failConn) Get(context.Context, string) ([]byte, bool, error) { return nil, false, f.err }
func (f failConn) PubSub() PubSub                                    { return nil }
func (f failConn) Policies(context.Context) ([]string, error)        { return nil, f.err }
func (f failConn) Unsent(error) bool                                 { return true }

// TestRefusedErrorsNotMarked: an acquisition's first command that never
// reached Redis is marked store.ErrNotApplied, but the follow-up of a
// refused SET is not, even when it never left either: the refused SET may
// have been the client's retry of one that took the key, which the Limiter
// must then free.
func TestRefusedErrorsNotMarked(t *testing.T) {
	closed := errors.New("client closed")
	s := New("test", failConn{closed})
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	req := store.Request{Key: "k", Token: "t", TTL: time.Second}
	_, err := s.Acquire(ctx, req)
	require.ErrorIs(t, err, store.ErrNotApplied)
	require.ErrorIs(t, err, closed)
	_, err = s.acquireScript(ctx, req, 1000, false)
	require.ErrorIs(t, err, closed)
	require.NotErrorIs(t, err, store.ErrNotApplied)
}
