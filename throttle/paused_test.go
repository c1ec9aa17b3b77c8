package throttle_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redisstore"
)

// TestPausedBeforeFirstAnswer: a Redis stopped with SIGSTOP before the
// store's first answer is an outage, decided by WhenStoreFails (here:
// through unguarded), for each of a burst of requests, not load: none is
// shed with 503. The client's reads time out after each Timeout and the
// limiter sends again; silence is counted from the first send, so the
// retries do not hide it (before, each retry restarted it and every
// request was shed at the load limit, logged as a busy store).
func TestPausedBeforeFirstAnswer(t *testing.T) {
	if testing.Short() {
		t.Skip("needs redis-server")
	}
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true,
		DialTimeout: 30 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second})
	t.Cleanup(func() { _ = client.Close() })
	require.NoError(t, client.Ping(context.Background()).Err(), "a pooled connection, dialled before the pause")
	st := redisstore.New(client)
	t.Cleanup(func() { _ = st.Close() })
	l := newLock(t, st, throttle.LockConfig{Name: "paused", Options: throttle.Options{
		WhenStoreFails: throttle.FailOpen, Timeout: 50 * time.Millisecond}})

	srv.Pause(t)
	defer srv.Resume(t)
	const burst = 8
	var wg sync.WaitGroup
	errs := make([]error, burst)
	leases := make([]*throttle.Lease, burst)
	for i := range burst {
		wg.Go(func() { leases[i], errs[i] = l.Admit(context.Background(), "u"+string(rune('a'+i))) })
	}
	wg.Wait()
	for i := range burst {
		assert.NoError(t, errs[i], "request %d: a paused Redis is an outage, failing open here", i)
		assert.Nil(t, leases[i], "request %d", i)
	}
	s := l.Stats()
	assert.Zero(t, s.Shed, "a paused Redis was taken for load")
	assert.Equal(t, uint64(burst), s.FailedOpen)
}
