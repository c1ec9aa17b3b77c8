package redisstore_test

import (
	"testing"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/redis/go-redis/v9"
)

// newStore starts a Redis server and returns a store on it (closed at the
// test's end), the server, and the client the store uses.
func newStore(t testing.TB, opts ...redisstore.Option) (*redisstore.Store, *redistest.Server, *redis.Client) {
	t.Helper()
	srv := redistest.Start(t)
	c := srv.Client(t)
	s := redisstore.New(c, opts...)
	t.Cleanup(func() { _ = s.Close() })
	return s, srv, c
}

// key returns a key unique to the test, in the shape throttle.Key builds.
func key(t testing.TB) string {
	t.Helper()
	return throttle.Key("test", t.Name(), throttle.NewToken())
}
