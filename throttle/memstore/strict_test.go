package memstore

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

// logsUsed returns what the strict logs count against their bound in all
// shards, checking that it is what their entries add up to, and that no
// log keeps more entries gone than left, nor room for more than eight
// times its entries (plus a little).
func (s *Store) logsUsed(t *testing.T) int64 {
	t.Helper()
	var used int64
	for i := range s.shards {
		sh := &s.shards[i]
		var sum int64
		for k, l := range sh.logs.m {
			require.Positive(t, l.size(), "an empty log kept for %q", k)
			require.LessOrEqual(t, cap(l.buf), 8*int(l.size())+32, "log of %q: %d entries, room for %d", k, l.size(), cap(l.buf))
			require.Less(t, l.off, int(l.size()), "log of %q: %d entries gone, %d left", k, l.off, l.size())
			sum += l.size()
		}
		require.Equal(t, sum, sh.logs.used, "shard %d: counted against the entries kept", i)
		used += sum
	}
	return used
}

// TestStrictLogMemory: a strict log counts each admission it keeps as one
// key, goes when its last admission leaves the window or is refunded, keeps
// its memory within a few times its admissions while a client hammers it
// for many windows, and a log that would outgrow WithMaxKeys fails with
// store.ErrFull, writing nothing.
func TestStrictLogMemory(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now))
	ctx := context.Background()
	r := store.Rate{Limit: 1000, Window: time.Minute, Burst: 1000, Strict: true}
	d, err := s.AllowN(ctx, "k", r, 1000)
	require.NoError(t, err)
	require.True(t, d.Allowed, "%+v", d)
	require.EqualValues(t, 1000, s.logsUsed(t), "a log of 1000")
	_, err = s.AllowN(ctx, "k", r, -999)
	require.NoError(t, err)
	require.EqualValues(t, 1, s.logsUsed(t), "after a refund of 999")
	_, err = s.AllowN(ctx, "k", r, -1)
	require.NoError(t, err)
	require.Zero(t, s.logsUsed(t), "after a refund of all")

	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		clk.Advance(time.Duration(rng.IntN(100)) * time.Millisecond)
		_, err := s.AllowN(ctx, "k"+strconv.Itoa(i%3), r, rng.IntN(30)-5)
		require.NoError(t, err)
		if i%97 == 0 {
			s.logsUsed(t)
		}
	}
	clk.Advance(r.Window)
	for i := range 3 {
		_, err := s.AllowN(ctx, "k"+strconv.Itoa(i), r, 0)
		require.NoError(t, err)
	}
	require.Zero(t, s.logsUsed(t), "after every admission left")

	small := New(WithClock(clk.Now), WithMaxKeys(16))
	r = store.Rate{Limit: 20, Window: time.Minute, Burst: 20, Strict: true}
	d, err = small.AllowN(ctx, "a", r, 10)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	_, err = small.AllowAll(ctx, []store.Limit{{Key: "b", Rate: r}, {Key: "c", Rate: r}}, 4)
	require.ErrorIs(t, err, store.ErrFull, "two new logs of 4 with room for 6")
	require.EqualValues(t, 10, small.logsUsed(t), "the refused AllowAll wrote nothing")
	_, err = small.AllowN(ctx, "a", r, 7)
	require.ErrorIs(t, err, store.ErrFull, "a log outgrowing the bound")
	d, err = small.AllowN(ctx, "a", r, 6)
	require.NoError(t, err)
	require.Equal(t, 4, d.Remaining, "the log filling the bound")
	clk.Advance(r.Window)
	d, err = small.AllowN(ctx, "b", r, 16)
	require.NoError(t, err, "once the first log left the window")
	require.True(t, d.Allowed)
}

// TestStrictDelete: Delete empties a strict log, and frees what it counted.
func TestStrictDelete(t *testing.T) {
	s := New()
	ctx := context.Background()
	r := store.Rate{Limit: 3, Window: time.Hour, Burst: 3, Strict: true}
	key := storekit.Key("t", "strict", "u") + storekit.StrictSuffix
	_, err := s.AllowN(ctx, key, r, 3)
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, key))
	require.Zero(t, s.logsUsed(t))
	d, err := s.AllowN(ctx, key, r, 0)
	require.NoError(t, err)
	require.Equal(t, store.Decision{Allowed: true, Remaining: 3}, d)
}
