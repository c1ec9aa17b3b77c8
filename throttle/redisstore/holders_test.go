package redisstore_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// placeReq is a request for one of three places of key.
func placeReq(key string, ttl time.Duration) store.Request {
	return store.Request{Key: key, Token: storekit.NewToken(), TTL: ttl, Holders: 3}
}

// requirePTTL fails the test unless key's PTTL is in (want-slack, want].
func requirePTTL(t testing.TB, c *redis.Client, key string, want time.Duration, what string) {
	t.Helper()
	pttl, err := c.PTTL(context.Background(), key).Result()
	require.NoError(t, err, "PTTL")
	require.True(t, pttl > want-time.Second && pttl <= want, "%s: PTTL %v, want about %v", what, pttl, want)
}

// TestHoldersDataModel: a semaphore is a sorted set of tokens scored by
// their expiry in the server's milliseconds, expiring with its latest
// holder, changed in one round trip per call; a set whose holders all went
// away disappears by itself.
func TestHoldersDataModel(t *testing.T) {
	s, srv, sc := newStore(t)
	ctx := context.Background()
	loadScripts(t, s, sc)
	trips := &tripCounter{}
	sc.AddHook(trips)
	c := srv.Client(t) // looks, without counting as the store's round trips

	k := key(t)
	a, b := placeReq(k, 10*time.Second), placeReq(k, 20*time.Second)
	mustAcquire(t, s, a)
	g := mustAcquire(t, s, b)
	assert.Equal(t, 2, g.Holders, "holders after the second grant")
	assert.EqualValues(t, 2, trips.n.Load(), "round trips of two grants")
	typ, err := c.Type(ctx, k).Result()
	require.NoError(t, err)
	require.Equal(t, "zset", typ, "TYPE of a semaphore")
	score, err := c.ZScore(ctx, k, a.Token).Result()
	require.NoError(t, err, "ZSCORE of a holder")
	now, err := c.Time(ctx).Result()
	require.NoError(t, err, "TIME")
	ahead := time.Duration(int64(score)-now.UnixMilli()) * time.Millisecond
	require.True(t, ahead > 9*time.Second && ahead <= 10*time.Second, "a holder's score is %v ahead of the server clock, want about 10s", ahead)
	requirePTTL(t, c, k, 20*time.Second, "after two grants")

	trips.n.Store(0)
	mustOutcome(t, store.OK)(s.Release(ctx, k, b.Token))
	requirePTTL(t, c, k, 10*time.Second, "after the latest holder's release")
	mustOutcome(t, store.OK)(s.Extend(ctx, k, a.Token, 30*time.Second))
	requirePTTL(t, c, k, 30*time.Second, "after Extend")
	mustOutcome(t, store.OK)(s.Release(ctx, k, a.Token))
	assert.EqualValues(t, 3, trips.n.Load(), "round trips of Release, Extend, Release")
	n, err := c.Exists(ctx, k).Result()
	require.NoError(t, err)
	require.Zero(t, n, "a semaphore whose last holder released")

	mustAcquire(t, s, placeReq(k, 50*time.Millisecond)) // and never released
	require.Eventually(t, func() bool { return c.Exists(ctx, k).Val() == 0 }, 3*time.Second, 10*time.Millisecond,
		"an abandoned semaphore never expired")
}

// commandStats returns the calls of each command since the last CONFIG
// RESETSTAT, scripts' commands included (not EVALSHA itself).
func commandStats(t testing.TB, c *redis.Client) map[string]int {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err, "INFO commandstats")
	calls := map[string]int{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		name, found := strings.CutPrefix(name, "cmdstat_")
		if !ok || !found || name == "evalsha" || strings.HasPrefix(name, "config") {
			continue
		}
		n, _, _ := strings.Cut(rest, ",")
		calls[name], err = strconv.Atoi(n)
		require.NoError(t, err, "INFO line %q", line)
	}
	return calls
}

// TestPlainLockCommands pins the commands a plain lock's Release and
// Extend run in their scripts, which also serve semaphores: the semaphore's
// branches cost a plain lock nothing.
func TestPlainLockCommands(t *testing.T) {
	s, _, c := newStore(t, redisstore.WithPath("set"))
	ctx := context.Background()
	loadScripts(t, s, c)
	for _, tc := range []struct {
		name string
		call func(key, token string) (store.Outcome, error)
		want map[string]int
	}{
		{"release", func(k, tok string) (store.Outcome, error) { return s.Release(ctx, k, tok) },
			map[string]int{"get": 1, "del": 1, "publish": 1}},
		{"extend", func(k, tok string) (store.Outcome, error) { return s.Extend(ctx, k, tok, time.Minute) },
			map[string]int{"type": 1, "get": 1, "pexpire": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := store.Request{Key: key(t), Token: storekit.NewToken(), TTL: time.Minute}
			mustAcquire(t, s, req)
			require.NoError(t, c.ConfigResetStat(ctx).Err())
			mustOutcome(t, store.OK)(tc.call(req.Key, req.Token))
			require.Equal(t, tc.want, commandStats(t, c), "commands of a plain lock's %s", tc.name)
		})
	}
}

// TestHoldersReplicaAck: under WithReplicaAck a place is granted once the
// replica has it, in one round trip, and refused (the place freed again)
// when the replica does not acknowledge; the other holders keep theirs.
func TestHoldersReplicaAck(t *testing.T) {
	r := startReplicated(t)
	s, trips := ackStore(t, r, false, redisstore.WithReplicaAck(1, 100*time.Millisecond))
	ctx := context.Background()
	k := key(t)
	first := placeReq(k, time.Minute)
	mustAcquire(t, s, first)
	assert.EqualValues(t, 1, trips.n.Load(), "round trips of an acknowledged place")
	score := r.replica.Client(t).ZScore(ctx, k, first.Token)
	require.NoError(t, score.Err(), "the acknowledged place on the replica")

	r.link.SetBlackHole(true)
	defer r.link.Clear()
	second := placeReq(k, time.Minute)
	g, err := s.Acquire(ctx, second)
	require.ErrorIs(t, err, redisstore.ErrNotReplicated, "an unacknowledged place: %+v", g)
	require.ErrorIs(t, err, store.ErrNotApplied)
	require.False(t, g.Acquired, "an unacknowledged place: %+v", g)
	master := r.master.Client(t)
	require.ErrorIs(t, master.ZScore(ctx, k, second.Token).Err(), redis.Nil, "the unacknowledged place was left held")
	require.NoError(t, master.ZScore(ctx, k, first.Token).Err(), "the first holder lost its place")
}
