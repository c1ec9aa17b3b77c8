package redisstore_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redisstore"
)

// tripCounter is a go-redis hook that counts round trips: one per command
// sent alone and one per pipeline.
type tripCounter struct{ n atomic.Int64 }

func (c *tripCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *tripCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

func (c *tripCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

// TestRoundTrips pins the cost of admission: an admitted Lock.Admit
// costs one round trip, and so does a release, on every acquisition path
// and with fencing and reentrancy; a rejected one costs one too, except on
// the plain SET path, where it costs two (SET NX, then the acquire script).
// It fails as soon as any of them grows.
func TestRoundTrips(t *testing.T) {
	_, srv, _ := newStore(t)
	ctx := context.Background()
	cases := []struct {
		name   string
		path   string // of plain acquisitions: "set", "pipeline" or "script"
		reject int64  // round trips of a rejection
		config throttle.LockConfig
	}{
		{"plain-set", "set", 2, throttle.LockConfig{Name: "rt"}},
		{"plain-pipeline", "pipeline", 1, throttle.LockConfig{Name: "rt"}},
		{"plain-script", "script", 1, throttle.LockConfig{Name: "rt"}},
		{"fenced", "set", 1, throttle.LockConfig{Name: "rt", Fence: true}},
		{"reentrant", "set", 1, throttle.LockConfig{Name: "rt", Reentrant: true, Fence: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := srv.Client(t)
			trips := &tripCounter{}
			c.AddHook(trips)
			s := redisstore.New(c, redisstore.WithPath(tc.path))
			t.Cleanup(func() { _ = s.Close() })
			<-redisstore.ConfigChecked(s) // its CONFIG GET would count as a command
			loadScripts(t, s, c)          // no SCRIPT LOAD adds a round trip
			l, err := throttle.NewLock(s, tc.config)
			require.NoError(t, err)

			id := t.Name()
			trips.n.Store(0)
			lease, rej := l.Admit(ctx, id)
			require.Nil(t, rej, "first admission rejected")
			require.NotNil(t, lease)
			assert.EqualValues(t, 1, trips.n.Swap(0), "round trips of an admitted Admit")
			_, rej = l.Admit(ctx, id)
			require.NotNil(t, rej, "second admission was not rejected")
			assert.Equal(t, tc.reject, trips.n.Swap(0), "round trips of a rejected Admit")
			require.NoError(t, lease.Release(ctx))
			assert.EqualValues(t, 1, trips.n.Swap(0), "round trips of a release")
		})
	}
}

// TestRoundTripCounterCounts makes sure the hook sees traffic at all, so
// that TestRoundTrips cannot pass by counting nothing.
func TestRoundTripCounterCounts(t *testing.T) {
	_, _, c := newStore(t)
	trips := &tripCounter{}
	c.AddHook(trips)
	ctx := context.Background()
	// The first command also opens the connection, whose handshake
	// (HELLO, CLIENT SETINFO) the hook sees too; count after it.
	_ = c.Ping(ctx)
	trips.n.Store(0)
	_ = c.Ping(ctx)
	_, _ = c.Pipelined(ctx, func(p redis.Pipeliner) error { p.Ping(ctx); p.Ping(ctx); return nil })
	assert.EqualValues(t, 2, trips.n.Load(), "round trips counted for a command and a pipeline")
}
