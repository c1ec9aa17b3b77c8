package redisalgo

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle/store"
)

// clusterConn is a Conn on a pretend Cluster whose every key is held, and
// whose masters a test changes.
type clusterConn struct {
	mu      sync.Mutex
	masters []string
	tracks  int                      // Track calls
	live    map[string]*fakeTracking // of the last Track
}

func (c *clusterConn) Eval(context.Context, *Script, []string, ...string) ([]int64, error) {
	return nil, errors.New("no script here")
}

func (c *clusterConn) SetNX(context.Context, string, string, int64, bool) (bool, string, int64, error) {
	return false, "holder", 60_000, nil
}

func (c *clusterConn) Get(context.Context, string) ([]byte, bool, error) { return nil, false, nil }
func (c *clusterConn) PubSub() PubSub                                    { return nil }
func (c *clusterConn) Policies(context.Context) ([]string, error)        { return nil, nil }
func (c *clusterConn) Unsent(error) bool                                 { return false }

func (c *clusterConn) Track(_ context.Context, _ []string) (map[string]Tracking, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tracks++
	ts, live := map[string]Tracking{}, map[string]*fakeTracking{}
	for _, m := range c.masters {
		t := &fakeTracking{keys: make(chan []string, 1), lost: make(chan struct{})}
		ts[m], live[m] = t, t
	}
	c.live = live
	return ts, nil
}

func (c *clusterConn) Masters(context.Context) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(slices.Values(c.masters)), nil
}

func (c *clusterConn) set(masters ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.masters = masters
}

// state returns how many times Track was called and the connections it
// made last.
func (c *clusterConn) state() (int, map[string]*fakeTracking) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tracks, c.live
}

type fakeTracking struct {
	keys chan []string
	lost chan struct{}
}

func (t *fakeTracking) Start(context.Context) error { return nil }

func (t *fakeTracking) Receive(ctx context.Context, d time.Duration) ([]string, bool, error) {
	select {
	case k := <-t.keys:
		return k, true, nil
	case <-t.lost:
		return nil, false, errors.New("connection lost")
	case <-ctx.Done():
	case <-time.After(d):
	}
	return nil, false, nil
}

func (t *fakeTracking) Ping(context.Context) error { return nil }
func (t *fakeTracking) Close() error               { return nil }

// TestNearClusterTopology follows the near cache on a pretend Cluster
// through the changes of its topology, on a fake clock: a connection to
// each master; Moved (a MOVED or ASK reply) drops every entry and keeps
// none until the masters were read again; a master added (seen when they
// are read every nearTopology) and a connection lost empty the cache and
// reconnect to every master; an invalidation on one master's connection
// drops its key.
func TestNearClusterTopology(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, key := context.Background(), "test:{k}"
		c := &clusterConn{masters: []string{"a:1", "b:1"}}
		s := New("test", c, WithPath("pipeline"), WithLogger(slog.New(slog.DiscardHandler)))
		defer func() { _ = s.Close() }()
		refuse := func() (hit bool) {
			t.Helper()
			hits := s.NearCacheStats().Hits
			g, err := s.Acquire(ctx, store.Request{Key: key, Token: "me", TTL: time.Minute})
			require.NoError(t, err)
			require.False(t, g.Acquired)
			return s.NearCacheStats().Hits > hits
		}
		kept := func(when string) {
			t.Helper()
			require.False(t, refuse(), "%s: answered from an empty cache", when)
			require.Equal(t, 1, s.NearCacheStats().Entries, "%s: the refusal was not kept", when)
			require.True(t, refuse(), "%s: the kept refusal did not answer", when)
		}

		refuse() // starts tracking
		synctest.Wait()
		kept("tracking")
		tracks, live := c.state()
		require.Equal(t, 1, tracks)
		require.Len(t, live, 2, "connections")

		func() {
			c.mu.Lock() // the masters are not read again (Masters waits) until the checks are done
			defer c.mu.Unlock()
			Moved(s)
			require.Zero(t, s.NearCacheStats().Entries, "entries after Moved")
			require.False(t, s.stamp(key).ok, "a refusal may be kept before the masters were read again")
		}()
		synctest.Wait() // the masters read again: the same
		kept("after Moved")
		tracks, _ = c.state()
		require.Equal(t, 1, tracks, "reconnected although the masters are the same")

		c.set("a:1", "b:1", "c:1")
		time.Sleep(nearTopology)
		synctest.Wait()
		require.Zero(t, s.NearCacheStats().Entries, "entries after a master was added")
		tracks, live = c.state()
		require.Equal(t, 2, tracks)
		require.Len(t, live, 3, "connections")
		kept("a master added")

		close(live["b:1"].lost)
		synctest.Wait()
		require.Zero(t, s.NearCacheStats().Entries, "entries after a connection was lost")
		time.Sleep(maxBackoff)
		synctest.Wait()
		tracks, live = c.state()
		require.Equal(t, 3, tracks)
		kept("reconnected")

		live["c:1"].keys <- []string{key}
		synctest.Wait()
		require.Zero(t, s.NearCacheStats().Entries, "entries after the key's invalidation")
	})
}
