package throttle_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redisstore"
)

// crashReplayConfig is shared by the process that dies mid-request and the
// test: answers kept an hour, the in-flight mark under a lease of a second.
func crashReplayConfig() throttle.ReplayConfig {
	return throttle.ReplayConfig{Name: "crash-replay", TTL: time.Hour, Lease: time.Second, Wait: -1,
		Options: throttle.Options{Timeout: time.Second}}
}

// TestReplayKilledMidRequest claims a key in another process, which is then
// killed with SIGKILL while its request runs (as issue 35 did to an echo
// process): its retry must run within about one Lease, not get 409 for the
// whole TTL; and the retry's answer, once recorded, keeps the TTL.
func TestReplayKilledMidRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("needs redis-server")
	}
	b := redisBackend(t)
	c := crashReplayConfig()
	cmd, line := startHelper(t, "replayer", b.srv.Addr)
	key, ok := strings.CutPrefix(line, "claimed ")
	require.True(t, ok, "the replayer's line: %q", line)

	ctx := context.Background()
	r := newReplay(t, b.store, c)
	// The mark outlives its first lease only thanks to the live process,
	// and is never held for longer than a lease ahead.
	time.Sleep(2 * c.Lease)
	_, _, err := r.Claim(ctx, "order-1")
	isOnly(t, err, throttle.ErrContended)
	pttl, err := b.rdb.PTTL(ctx, key).Result()
	require.NoError(t, err)
	require.True(t, pttl > 0 && pttl <= c.Lease, "PTTL %v of a mark in flight, want at most the lease %v", pttl, c.Lease)

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	var lease *throttle.Lease
	require.True(t, waitFor(c.Lease+10*time.Second, func() bool {
		lease, _, err = r.Claim(ctx, "order-1")
		return lease != nil
	}), "the retry of a crashed request never ran: %v", err)
	require.NoError(t, lease.Record(ctx, []byte("201 Created")))
	pttl, err = b.rdb.PTTL(ctx, key).Result()
	require.NoError(t, err)
	require.True(t, pttl > c.TTL-time.Minute && pttl <= c.TTL, "PTTL %v of a recorded key, want the TTL %v", pttl, c.TTL)
	_, rec, err := r.Claim(ctx, "order-1")
	require.NoError(t, err)
	require.Equal(t, "201 Created", string(rec), "the retry's answer")
}

// runReplayer is the helper process of TestReplayKilledMidRequest: it
// claims the key, says so, and runs "the request" until it is killed.
func runReplayer() error {
	rdb := newClient(os.Getenv("REPLAYER_REDIS"))
	defer rdb.Close()
	r, err := throttle.NewReplay(redisstore.New(rdb), crashReplayConfig())
	if err != nil {
		return err
	}
	lease, _, err := r.Claim(context.Background(), "order-1")
	if lease == nil {
		return fmt.Errorf("no lease: %w", err)
	}
	fmt.Println("claimed", lease.Key())
	select {}
}

// TestReplayLongRequest: while a request runs for several leases, its
// duplicates are turned away (409, waiting or not) and its key never lives
// longer than a lease ahead; once recorded, the key and its record live for
// the TTL.
func TestReplayLongRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("needs redis-server")
	}
	b := redisBackend(t)
	ctx := context.Background()
	// The lease is refreshed every third of it on real time (the store is a
	// real Redis): 2 s leaves a loaded machine 1.3 s to be late.
	c := throttle.ReplayConfig{Name: "long", TTL: time.Hour, Lease: 2 * time.Second, Wait: -1}
	r := newReplay(t, b.store, c)
	waiting := c
	waiting.Wait = 100 * time.Millisecond
	w := newReplay(t, b.store, waiting)
	lease, _, err := r.Claim(ctx, "u")
	require.NoError(t, err)
	defer lease.Release(ctx)
	require.Equal(t, c.Lease, r.Config().Lease)

	for start := time.Now(); time.Since(start) < 2*c.Lease; time.Sleep(50 * time.Millisecond) {
		pttl, err := b.rdb.PTTL(ctx, lease.Key()).Result()
		require.NoError(t, err)
		require.True(t, pttl > 0 && pttl <= c.Lease, "PTTL %v in flight, want at most the lease %v", pttl, c.Lease)
		_, _, err = r.Claim(ctx, "u")
		isOnly(t, err, throttle.ErrContended)
		_, _, err = w.Claim(ctx, "u")
		isOnly(t, err, throttle.ErrContended)
	}
	require.NoError(t, lease.Record(ctx, []byte("done")))
	for _, k := range []string{lease.Key(), storekit.RecordKey(lease.Key())} {
		pttl, err := b.rdb.PTTL(ctx, k).Result()
		require.NoError(t, err)
		require.True(t, pttl > c.TTL-time.Minute && pttl <= c.TTL, "PTTL %v of %s once recorded, want the TTL %v", pttl, k, c.TTL)
	}
	require.Greater(t, lease.ValidFor(), c.Lease, "the lease once recorded")
	time.Sleep(c.Lease) // no refresh cuts the key back to a lease
	pttl, err := b.rdb.PTTL(ctx, lease.Key()).Result()
	require.NoError(t, err)
	require.Greater(t, pttl, c.TTL-time.Minute, "PTTL a lease after the record")
}
