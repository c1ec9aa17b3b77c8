package redisstore_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/throttle/redisstore"
)

// openNear is redistest.Open for this store.
func openNear(t testing.TB, addr, user string, opts ...redisstore.Option) *redisstore.Store {
	o := &redis.Options{Addr: addr, ContextTimeoutEnabled: true}
	if user != "" {
		o.Username, o.Password = user, "pw"
	}
	c := redis.NewClient(o)
	s := redisstore.New(c, opts...)
	t.Cleanup(func() { _ = s.Close(); _ = c.Close() })
	<-redisstore.ConfigChecked(s)
	return s
}

func TestNearCache(t *testing.T) { redistest.CheckNearCache(t, openNear) }

func TestNearCacheReleaseDelay(t *testing.T) { redistest.NearCacheDelay(t, openNear) }

// The near cache is off on a Cluster (one tracking connection per master
// and a topology change to follow are not built yet).
func TestNearCacheOffOnCluster(t *testing.T) {
	s := redisstore.New(redistest.StartCluster(t, 3).Client(t))
	t.Cleanup(func() { _ = s.Close() })
	redistest.CheckNearCacheOff(t, s)
}
