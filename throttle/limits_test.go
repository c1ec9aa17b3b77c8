package throttle_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
)

var (
	perSecond = throttle.Rate{Name: "burst", Limit: 3, Window: time.Second}
	perDay    = throttle.Rate{Name: "daily", Limit: 5, Window: 24 * time.Hour}
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *fakeClock { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestAllowAll: several rates decided as one: charged to all, or to none.
func TestAllowAll(t *testing.T) {
	clock := newClock()
	q, err := throttle.NewQuota(memstore.New(memstore.WithClock(clock.Now)), throttle.QuotaConfig{Name: "api"})
	require.NoError(t, err)
	ctx := context.Background()
	rates := []throttle.Rate{perSecond, perDay}
	for i := range 3 {
		ds, err := q.AllowAll(ctx, "u", rates, 1)
		require.NoError(t, err)
		require.Len(t, ds, 2)
		assert.True(t, ds[0].Allowed && ds[1].Allowed, "request %d", i)
		assert.Equal(t, []int{2 - i, 4 - i}, []int{ds[0].Remaining, ds[1].Remaining})
	}
	ds, err := q.AllowAll(ctx, "u", rates, 1)
	require.NoError(t, err)
	assert.False(t, ds[0].Allowed || ds[1].Allowed, "the fourth within a second")
	assert.Equal(t, 2, ds[1].Remaining, "a refusal was charged to the daily rate")
	assert.Positive(t, ds[0].RetryAfter)
	assert.Zero(t, ds[1].RetryAfter, "the daily rate alone would allow it")

	// A rate's state carries over from call to call by its name.
	d, err := q.Allow(ctx, "u", perDay, 0)
	require.NoError(t, err)
	assert.Equal(t, 2, d.Remaining, "Allow of the daily rate alone")

	clock.Advance(time.Second)
	ds, err = q.AllowAll(ctx, "u", rates, 2)
	require.NoError(t, err)
	assert.True(t, ds[0].Allowed, "two more after a second")
	assert.Equal(t, 0, ds[1].Remaining)
	clock.Advance(time.Second)
	ds, err = q.AllowAll(ctx, "u", rates, 1)
	require.NoError(t, err)
	assert.False(t, ds[0].Allowed, "the daily rate refuses now")
	assert.Equal(t, 3, ds[0].Remaining, "a refusal by the daily rate was charged to the burst rate (full again)")

	for name, bad := range map[string][]throttle.Rate{
		"none":        nil,
		"same name":   {perSecond, perSecond},
		"bad rate":    {perSecond, {Name: "x"}},
		"bad name":    {perSecond, {Name: `a"b`, Limit: 1, Window: time.Second}},
		"quota named": {{Limit: 1, Window: time.Second}, {Name: "api", Limit: 2, Window: time.Second}},
	} {
		_, err := q.AllowAll(ctx, "u", bad, 1)
		assert.ErrorIs(t, err, store.ErrInvalid, name)
	}
}

// TestAdmitAll: a refusal is a ContendedError whose RetryAfter is when the
// cost fits every rate, with every rate's decision.
func TestAdmitAll(t *testing.T) {
	q, err := throttle.NewQuota(memstore.New(), throttle.QuotaConfig{Name: "api"})
	require.NoError(t, err)
	ctx := context.Background()
	rates := []throttle.Rate{perSecond, {Name: "minute", Limit: 3, Window: time.Minute}}
	for range 3 {
		_, err := q.AdmitAll(ctx, "u", rates, 1)
		require.NoError(t, err)
	}
	ds, err := q.AdmitAll(ctx, "u", rates, 1)
	var ce *throttle.ContendedError
	require.ErrorAs(t, err, &ce)
	require.Len(t, ds, 2)
	assert.InDelta(t, 20*time.Second, ce.RetryAfter, float64(time.Second), "when one request fits both: the minute rate's")
	_, err = q.AdmitAll(ctx, "u", rates, 0)
	require.ErrorAs(t, err, &ce, "a peek at a spent quota")
}

// TestAllowAllConcurrent: goroutines deciding two rates together never go
// over either, and refusals cost nothing.
func TestAllowAllConcurrent(t *testing.T) {
	q, err := throttle.NewQuota(memstore.New(), throttle.QuotaConfig{Name: "api"})
	require.NoError(t, err)
	rates := []throttle.Rate{{Name: "small", Limit: 9, Window: time.Hour}, {Name: "large", Limit: 40, Window: time.Hour}}
	var allowed atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				ds, err := q.AllowAll(context.Background(), "u", rates, 1)
				if assert.NoError(t, err) && ds[0].Allowed {
					allowed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int32(9), allowed.Load())
	d, err := q.Allow(context.Background(), "u", rates[1], 0)
	require.NoError(t, err)
	assert.Equal(t, 31, d.Remaining, "the large rate was charged for refusals")
}

// TestQuotaReset: Reset fills a user's quota again, under each rate named.
func TestQuotaReset(t *testing.T) {
	q, err := throttle.NewQuota(memstore.New(), throttle.QuotaConfig{Name: "api"})
	require.NoError(t, err)
	ctx := context.Background()
	plain := throttle.Rate{Limit: 2, Window: time.Hour}
	for range 2 {
		_, err := q.Allow(ctx, "u", plain, 1)
		require.NoError(t, err)
		_, err = q.AllowAll(ctx, "u", []throttle.Rate{perSecond, perDay}, 1)
		require.NoError(t, err)
	}
	_, err = q.Allow(ctx, "other", plain, 1)
	require.NoError(t, err)

	require.NoError(t, q.Reset(ctx, "u"))
	d, err := q.Allow(ctx, "u", plain, 0)
	require.NoError(t, err)
	assert.Equal(t, 2, d.Remaining, "the plain rate after Reset")
	d, err = q.Allow(ctx, "u", perDay, 0)
	require.NoError(t, err)
	assert.Equal(t, 3, d.Remaining, "Reset without rates left the named ones")

	require.NoError(t, q.Reset(ctx, "u", perSecond, perDay))
	ds, err := q.AllowAll(ctx, "u", []throttle.Rate{perSecond, perDay}, 0)
	require.NoError(t, err)
	assert.Equal(t, []int{3, 5}, []int{ds[0].Remaining, ds[1].Remaining}, "the named rates after Reset")
	d, err = q.Allow(ctx, "other", plain, 0)
	require.NoError(t, err)
	assert.Equal(t, 1, d.Remaining, "another user's quota")
}

// TestLockReset: Reset frees a held key at once; its holder finds the
// lease lost, and fences keep increasing.
func TestLockReset(t *testing.T) {
	l, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "job", Mode: throttle.Exclusive, Fence: true})
	require.NoError(t, err)
	ctx := context.Background()
	first, err := l.Acquire(ctx, "j")
	require.NoError(t, err)
	_, err = l.Acquire(ctx, "j")
	require.ErrorIs(t, err, throttle.ErrContended)
	require.NoError(t, l.Reset(ctx, "j"))
	second, err := l.Acquire(ctx, "j")
	require.NoError(t, err, "after Reset")
	assert.Greater(t, second.Fence(), first.Fence(), "fences after Reset")
	require.ErrorIs(t, first.Release(ctx), throttle.ErrNotHeld, "the reset holder's release")
	require.NoError(t, second.Release(ctx))
	require.NoError(t, l.Reset(ctx, "never-held"))
}

// TestHolders: an Exclusive lock of N holders lets N acquisitions hold a
// key at once; the N+1th is refused until one releases.
func TestHolders(t *testing.T) {
	l, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "exports", Mode: throttle.Exclusive, Holders: 2})
	require.NoError(t, err)
	ctx := context.Background()
	a, err := l.Acquire(ctx, "u")
	require.NoError(t, err)
	b, err := l.Acquire(ctx, "u")
	require.NoError(t, err)
	assert.ElementsMatch(t, []int{1, 2}, []int{a.Holders(), b.Holders()})
	_, err = l.Acquire(ctx, "u")
	var ce *throttle.ContendedError
	require.ErrorAs(t, err, &ce, "a third holder")
	assert.Positive(t, ce.RetryAfter)
	require.NoError(t, a.Release(ctx))
	c, err := l.Acquire(ctx, "u")
	require.NoError(t, err, "after one released")
	require.NoError(t, b.Release(ctx))
	require.NoError(t, c.Release(ctx))

	for name, c := range map[string]throttle.LockConfig{
		"dedupe":    {Name: "x", Holders: 2},
		"reentrant": {Name: "x", Mode: throttle.Exclusive, Holders: 2, Reentrant: true},
		"negative":  {Name: "x", Mode: throttle.Exclusive, Holders: -1},
	} {
		_, err := throttle.NewLock(memstore.New(), c)
		assert.True(t, errors.Is(err, store.ErrInvalid), "%s: %v", name, err)
	}
}
