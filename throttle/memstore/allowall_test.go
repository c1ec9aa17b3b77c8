package memstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle/store"
)

// quotaUsed returns what the shards' quota bounds count, which must equal
// the entries they hold.
func (s *Store) quotaUsed() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += int(sh.quotas.used)
		sh.mu.Unlock()
	}
	return n
}

// TestAllowAllFull: AllowAll's new entries make room together, dropping
// the least recently used quotas (never refused, issue 36); an expired entry
// that making room removes is counted again when written.
func TestAllowAllFull(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now), WithMaxKeys(minPerShard))
	ctx := context.Background()
	r := store.Rate{Limit: 1, Window: time.Second, Burst: 2}
	for i := range minPerShard - 1 {
		_, err := s.AllowN(ctx, fmt.Sprint("k", i), r, 1)
		require.NoError(t, err)
	}
	two := []store.Limit{{Key: "a", Rate: r}, {Key: "b", Rate: r}}
	ds, err := s.AllowAll(ctx, two, 1)
	require.NoError(t, err, "two new keys with room for one")
	require.True(t, ds[0].Allowed && ds[1].Allowed, "%+v", ds)
	require.Equal(t, minPerShard, s.quotaCount())
	_, kept := s.shards[0].quotas.m["k0"]
	require.False(t, kept, "the least recently used quota made room")

	// Every entry expired: k1 is charged again while the room for c sweeps
	// it away, and both end up counted once.
	clk.Advance(time.Second)
	ds, err = s.AllowAll(ctx, []store.Limit{{Key: "k1", Rate: r}, {Key: "c", Rate: r}}, 2)
	require.NoError(t, err)
	require.True(t, ds[0].Allowed && ds[1].Allowed && ds[0].Remaining == 0, "%+v", ds)
	require.Equal(t, s.quotaCount(), s.quotaUsed(), "entries and their count")
	require.LessOrEqual(t, s.quotaCount(), minPerShard)
}

// TestDeleteAccounting: Delete frees the bounds' room of a lock, a record
// and a quota, and keeps the fence counter.
func TestDeleteAccounting(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now), WithMaxKeys(minPerShard))
	ctx := context.Background()
	g, err := s.Acquire(ctx, store.Request{Key: "k", Token: "t", TTL: time.Minute, Fence: true})
	require.NoError(t, err)
	_, err = s.Record(ctx, "k", "t", make([]byte, 1000), time.Minute)
	require.NoError(t, err)
	_, err = s.AllowN(ctx, "q", store.Rate{Limit: 1, Window: time.Second, Burst: 2}, 1)
	require.NoError(t, err)
	require.Equal(t, 4, s.Len(), "a lock, its fence counter and record, a quota")
	require.NoError(t, s.Delete(ctx, "k", "q", "missing"))
	require.Equal(t, 1, s.Len(), "the fence counter is left")
	for i := range s.shards {
		sh := &s.shards[i]
		require.Zero(t, sh.locks.used+sh.records.used+sh.quotas.used, "shard %d counts what it no longer holds", i)
	}
	g2, err := s.Acquire(ctx, store.Request{Key: "k", Token: "u", TTL: time.Minute, Fence: true})
	require.NoError(t, err)
	require.Greater(t, g2.Fence, g.Fence)
	require.ErrorIs(t, s.Delete(ctx, ""), store.ErrInvalid)
}
