package memstore

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

// TestExpiryOfMixedTTLs: locks of a short TTL are removed once expired
// although longer ones, released long before they would expire, were taken
// before them.
func TestExpiryOfMixedTTLs(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now))
	for i := range 1000 {
		key := storekit.Key("p", "job", strconv.Itoa(i))
		acquire(t, s, key, "t", time.Hour)
		outcome(t, store.OK)(s.Release(bg, key, "t"))
	}
	for i := range 1000 {
		acquire(t, s, storekit.Key("p", "submit", strconv.Itoa(i)), "t", time.Second)
	}
	clk.Advance(time.Second)
	for i := range 2000 {
		acquire(t, s, storekit.Key("p", "later", strconv.Itoa(i)), "t", time.Second)
	}
	locks, _, _ := s.counts()
	require.LessOrEqual(t, locks, 2000+50, "about the 2000 live locks")
}

// TestExpiryAfterExtension: a lock extended (or re-entered) is not removed
// at its first expiry, and is removed at its new one.
func TestExpiryAfterExtension(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now), WithMaxKeys(16)) // one shard
	acquire(t, s, "k", "a", time.Second)
	outcome(t, store.OK)(s.Extend(bg, "k", "a", time.Minute))
	reentrant := store.Request{Key: "r", Token: "o", TTL: time.Second, Reentrant: true}
	_, err := s.Acquire(bg, reentrant)
	require.NoError(t, err)
	reentrant.TTL = time.Minute
	_, err = s.Acquire(bg, reentrant)
	require.NoError(t, err)
	clk.Advance(2 * time.Second)
	for i := range 10 {
		key := "other" + strconv.Itoa(i)
		acquire(t, s, key, "t", time.Hour)
		outcome(t, store.OK)(s.Release(bg, key, "t"))
	}
	for _, key := range []string{"k", "r"} {
		require.False(t, acquire(t, s, key, "b", time.Second).Acquired, "%s: taken after its first expiry: the extension was lost", key)
	}
	clk.Advance(time.Minute)
	for i := range 10 {
		key := "late" + strconv.Itoa(i)
		acquire(t, s, key, "t", time.Hour)
		outcome(t, store.OK)(s.Release(bg, key, "t"))
	}
	locks, _, _ := s.counts()
	require.Zero(t, locks, "locks stored a minute later")
}

// TestExpiryKeepsUpWithAStream: a stream of one-off keys keeps about the
// live locks stored, not all that were ever taken, and a lock released
// leaves nothing behind.
func TestExpiryKeepsUpWithAStream(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now))
	for i := range 100_000 {
		acquire(t, s, storekit.Key("p", "submit", strconv.Itoa(i)), "t", 10*time.Millisecond)
		clk.Advance(10 * time.Microsecond) // 1000 live locks
	}
	locks, _, _ := s.counts()
	require.LessOrEqual(t, locks, 2000, "locks stored for about 1000 live ones")

	s = New(WithMaxKeys(16))
	for i := range 100 {
		key := "job" + strconv.Itoa(i)
		acquire(t, s, key, "t", time.Hour)
		outcome(t, store.OK)(s.Release(bg, key, "t"))
	}
	require.Zero(t, s.Len(), "entries left by acquisitions each released at once")
}
