package rueidisstore_test

import (
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/rueidisstore"
)

// openNear is redistest.Open for this store.
func openNear(t testing.TB, addr, user string, opts ...redisstore.Option) *redisstore.Store {
	o := rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true}
	if user != "" {
		o.Username, o.Password = user, "pw"
	}
	c, err := rueidis.NewClient(o)
	require.NoError(t, err)
	s := rueidisstore.New(c, opts...)
	t.Cleanup(func() { _ = s.Close(); c.Close() })
	return s
}

func TestNearCache(t *testing.T) { redistest.CheckNearCache(t, openNear) }

func TestNearCacheReleaseDelay(t *testing.T) { redistest.NearCacheDelay(t, openNear) }

// The near cache is off on a Cluster (one tracking connection per master
// and a topology change to follow are not built yet).
func TestNearCacheOffOnCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: cl.Addrs, DisableCache: true})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	s := rueidisstore.New(c)
	t.Cleanup(func() { _ = s.Close() })
	redistest.CheckNearCacheOff(t, s)
}
