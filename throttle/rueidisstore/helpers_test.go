package rueidisstore_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/rueidisstore"
	"github.com/go-throttle/throttle/throttle/store"

	"github.com/stretchr/testify/require"
)

// newClient returns a rueidis client on srv, closed at the test's end.
func newClient(t testing.TB, srv *redistest.Server) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, DisableCache: true})
	require.NoError(t, err, "rueidis client on %s", srv.Addr)
	t.Cleanup(c.Close)
	return c
}

// newStore starts a Redis server and returns a store on it (closed at the
// test's end) and the server.
func newStore(t testing.TB, opts ...redisstore.Option) (*redisstore.Store, *redistest.Server) {
	t.Helper()
	srv := redistest.Start(t)
	s := rueidisstore.New(newClient(t, srv), opts...)
	t.Cleanup(func() { _ = s.Close() })
	return s, srv
}

// key returns a key unique to the test, in the shape throttle.Key builds.
func key(t testing.TB) string {
	t.Helper()
	return storekit.Key("test", t.Name(), storekit.NewToken())
}

func mustAcquire(t testing.TB, s store.Store, req store.Request) store.Grant {
	t.Helper()
	g, err := s.Acquire(context.Background(), req)
	require.NoError(t, err, "acquire %q", req.Key)
	require.True(t, g.Acquired, "acquire %q: held, %v remaining", req.Key, g.Remaining)
	return g
}

// numsub returns how many subscribers Redis counts on channel ch.
func numsub(t testing.TB, c *redis.Client, ch string) int64 {
	t.Helper()
	m, err := c.PubSubNumSub(context.Background(), ch).Result()
	require.NoError(t, err)
	return m[ch]
}
