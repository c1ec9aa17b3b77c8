package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"

	"github.com/stretchr/testify/require"
)

// newStore starts a Redis server and returns a store on it (closed at the
// test's end), the server, and the client the store uses.
func newStore(t testing.TB, opts ...redisstore.Option) (*redisstore.Store, *redistest.Server, *redis.Client) {
	t.Helper()
	srv := redistest.Start(t)
	c := srv.Client(t)
	s := redisstore.New(c, opts...)
	t.Cleanup(func() { _ = s.Close() })
	<-redisstore.ConfigChecked(s) // its CONFIG GET would count as a command
	return s, srv, c
}

// key returns a key unique to the test, in the shape throttle.Key builds.
func key(t testing.TB) string {
	t.Helper()
	return storekit.Key("test", t.Name(), storekit.NewToken())
}

var withFenceTTL = redisstore.WithFenceTTL

func mustAcquire(t testing.TB, s store.Store, req store.Request) store.Grant {
	t.Helper()
	g, err := s.Acquire(context.Background(), req)
	require.NoError(t, err, "acquire %q", req.Key)
	require.True(t, g.Acquired, "acquire %q: held, %v remaining", req.Key, g.Remaining)
	return g
}

func mustOutcome(t testing.TB, want store.Outcome) func(store.Outcome, error) {
	t.Helper()
	return func(got store.Outcome, err error) {
		t.Helper()
		require.NoError(t, err)
		require.Equal(t, want, got, "outcome")
	}
}

// plainPaths are the paths of plain acquisitions that the tests cover (see
// redisstore.WithPath).
var plainPaths = []string{"store", "set", "pipeline", "script"}

// loadScripts runs every script once through s, on keys of its own, and
// checks that s loaded each with SCRIPT LOAD on c's server: s knows their
// SHA1s from then on, and no load adds a round trip or a command later.
func loadScripts(t testing.TB, s *redisstore.Store, c *redis.Client) {
	t.Helper()
	ctx := context.Background()
	before := commandStats(t, c)["script|load"]
	k, tok := key(t), storekit.NewToken()
	ms := store.Rate{Limit: 1, Window: time.Second, Burst: 1}
	_, _ = s.Acquire(ctx, store.Request{Key: k, Token: tok, TTL: time.Minute, Fence: true})
	_, _ = s.Acquire(ctx, store.Request{Key: k + ":holders", Token: tok, TTL: time.Minute, Holders: 2})
	_, _ = s.Extend(ctx, k, tok, time.Minute)
	_, _ = s.Record(ctx, k, tok, nil, time.Minute)
	_, _ = s.Release(ctx, k, tok)
	_, _ = s.AllowN(ctx, k+":ms", ms, 0)
	_, _ = s.AllowN(ctx, k+":us", store.Rate{Limit: 3, Window: time.Millisecond, Burst: 1}, 0)
	_, _ = s.AllowAll(ctx, []store.Limit{{Key: k + ":all", Rate: ms}}, 1)
	_ = s.Delete(ctx, k)
	require.Len(t, redisstore.Scripts(), commandStats(t, c)["script|load"]-before, "scripts loaded")
}
