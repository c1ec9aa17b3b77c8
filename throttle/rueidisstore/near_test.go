package rueidisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/rueidisstore"
	"github.com/go-throttle/throttle/throttle/store"
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

func TestNearCacheReleaseDelay(t *testing.T) { redistest.NearCacheDelay(t, openNear, false) }

// TestNearCacheCluster runs the near cache's checks on a Redis Cluster
// through a rueidis Cluster client, with a tracking connection to each
// master, and moves a refused key's slot to another master.
func TestNearCacheCluster(t *testing.T) { redistest.CheckClusterNearCache(t, openNear) }

func TestNearCacheClusterReleaseDelay(t *testing.T) { redistest.NearCacheDelay(t, openNear, true) }

// A rueidis client forced to RESP2 would get no invalidation pushes: the
// near cache turns off rather than keep refusals nobody invalidates.
func TestNearCacheOffOnRESP2(t *testing.T) {
	srv := redistest.Start(t)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, DisableCache: true, AlwaysRESP2: true})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	s := rueidisstore.New(c)
	t.Cleanup(func() { _ = s.Close() })
	k := storekit.Key("test", "near", storekit.NewToken())
	_, err = s.Acquire(context.Background(), store.Request{Key: k, Token: storekit.NewToken(), TTL: time.Minute})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := s.Acquire(context.Background(), store.Request{Key: k, Token: storekit.NewToken(), TTL: time.Minute})
		require.NoError(t, err)
		return !s.NearCacheStats().On
	}, 10*time.Second, time.Millisecond, "the near cache stayed on over RESP2")
	require.Zero(t, s.NearCacheStats().Entries)
}
