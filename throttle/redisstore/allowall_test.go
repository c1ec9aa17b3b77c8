package redisstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// TestAllowAllRoundTrip: AllowAll over two limits, allowed or refused, is
// one round trip and one script call on the server; Delete is one per key.
func TestAllowAllRoundTrip(t *testing.T) {
	s, _, c := newStore(t)
	ctx := context.Background()
	loadScripts(t, s, c)
	trips := &tripCounter{}
	c.AddHook(trips)
	base := key(t)
	limits := []store.Limit{
		{Key: base, Rate: store.Rate{Limit: 10, Window: time.Minute, Burst: 10}},
		{Key: base + ":short", Rate: store.Rate{Limit: 1, Window: time.Minute, Burst: 1}},
	}
	for _, allowed := range []bool{true, false} {
		require.NoError(t, c.ConfigResetStat(ctx).Err())
		trips.n.Store(0)
		ds, err := s.AllowAll(ctx, limits, 1)
		require.NoError(t, err)
		assert.EqualValues(t, 1, trips.n.Load(), "round trips of AllowAll (allowed %v)", allowed)
		require.Equal(t, allowed, ds[0].Allowed, "%+v", ds)
		require.Equal(t, allowed, ds[1].Allowed, "%+v", ds)
		stats := c.Info(ctx, "commandstats").Val()
		assert.Contains(t, stats, "cmdstat_evalsha:calls=1,", "commands of AllowAll (allowed %v)", allowed)
		assert.NotContains(t, stats, "cmdstat_eval:", "commands of AllowAll (allowed %v)", allowed)
	}
	trips.n.Store(0)
	require.NoError(t, s.Delete(ctx, limits[0].Key, limits[1].Key))
	assert.EqualValues(t, 2, trips.n.Load(), "round trips of a Delete of two keys")
	ds, err := s.AllowAll(ctx, limits, 0)
	require.NoError(t, err)
	assert.Equal(t, [2]int{10, 1}, [2]int{ds[0].Remaining, ds[1].Remaining}, "after Delete: %+v", ds)
}

// TestAllowAllFormats: AllowAll reads the keys gcra.lua and gcra_ms.lua
// write (a TAT value, an empty value expiring at the TAT) and continues
// their quotas, writes what both read, and refuses a key that is no quota.
func TestAllowAllFormats(t *testing.T) {
	s, _, c := newStore(t)
	ctx := context.Background()
	for _, r := range []store.Rate{
		{Limit: 10, Window: time.Minute, Burst: 4}, // whole milliseconds: gcra_ms.lua's keys
		{Limit: 7, Window: time.Minute, Burst: 4},  // microseconds: gcra.lua's
	} {
		k := key(t)
		d, err := s.AllowN(ctx, k, r, 2)
		require.NoError(t, err)
		require.Equal(t, 2, d.Remaining)
		ds, err := s.AllowAll(ctx, []store.Limit{{Key: k, Rate: r}}, 1)
		require.NoError(t, err)
		require.True(t, ds[0].Allowed && ds[0].Remaining == 1, "AllowAll after AllowN under %+v: %+v", r, ds)
		d, err = s.AllowN(ctx, k, r, 1)
		require.NoError(t, err)
		require.True(t, d.Allowed && d.Remaining == 0, "AllowN after AllowAll under %+v: %+v", r, d)
		pttl := c.PTTL(ctx, k).Val()
		require.True(t, pttl > 0 && pttl <= 4*time.Minute/7+time.Millisecond, "PTTL %v", pttl)
	}
	k := key(t)
	require.NoError(t, c.Set(ctx, k, "token", time.Minute).Err())
	_, err := s.AllowAll(ctx, []store.Limit{{Key: k + ":other", Rate: store.Rate{Limit: 1, Window: time.Minute, Burst: 1}},
		{Key: k, Rate: store.Rate{Limit: 1, Window: time.Minute, Burst: 1}}}, 1)
	require.Error(t, err, "AllowAll over a lock's key")
	assert.Equal(t, "token", c.Get(ctx, k).Val())
	assert.Zero(t, c.Exists(ctx, k+":other").Val(), "a refused AllowAll wrote a key")
}

// TestClusterAllowAll: on a Redis Cluster, AllowAll over keys sharing a
// hash tag decides on whichever master owns the tag's slot, charging all or
// none; keys of different tags are refused by the server (CROSSSLOT).
func TestClusterAllowAll(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	s := redisstore.New(cl.Client(t))
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	masters := map[string]bool{}
	for _, tag := range []string{"x", "y", "z", "a", "b", "c", "d", "e"} {
		base := fmt.Sprintf("allowall:{%s}", tag)
		masters[cl.Owner(t, redistest.KeySlot(base)).Addr] = true
		limits := []store.Limit{
			{Key: base, Rate: store.Rate{Limit: 10, Window: time.Hour, Burst: 3}},
			{Key: base + ":burst", Rate: store.Rate{Limit: 10, Window: time.Hour, Burst: 2}},
		}
		for i, want := range []bool{true, true, false} {
			ds, err := s.AllowAll(ctx, limits, 1)
			require.NoError(t, err, "tag %s, charge %d", tag, i)
			require.True(t, ds[0].Allowed == want && ds[1].Allowed == want, "tag %s, charge %d: %+v", tag, i, ds)
		}
		d, err := s.AllowN(ctx, base, limits[0].Rate, 0)
		require.NoError(t, err)
		require.Equal(t, 1, d.Remaining, "tag %s: the refusal charged the larger quota", tag)
		require.NoError(t, s.Delete(ctx, base, base+":burst"))
	}
	require.Len(t, masters, 3, "the tags' slots are on every master")
	_, err := s.AllowAll(ctx, []store.Limit{
		{Key: "allowall:{x}", Rate: store.Rate{Limit: 10, Window: time.Hour, Burst: 3}},
		{Key: "allowall:{y}", Rate: store.Rate{Limit: 10, Window: time.Hour, Burst: 3}},
	}, 1)
	require.Error(t, err, "AllowAll over two hash tags")
	assert.True(t, strings.Contains(err.Error(), "CROSSSLOT"), "error %v", err)
}
