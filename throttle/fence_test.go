package throttle_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redisstore"
)

// fenceConfig is the config of the cross-process fencing test; the helper
// processes and the test share it.
func fenceConfig() throttle.LockConfig {
	return throttle.LockConfig{
		Name:    "fence",
		Mode:    throttle.Exclusive,
		TTL:     5 * time.Second,
		Fence:   true,
		Wait:    time.Minute,
		Backoff: throttle.ExponentialJitter(time.Millisecond, 20*time.Millisecond),
		Options: throttle.Options{Timeout: time.Second}, // a loaded machine must not turn into store errors
	}
}

const (
	fenceList = "fences"         // Redis list the helpers append to
	fenceID   = "shared-counter" // the one key every helper takes
)

// TestFenceIncreasesAcrossProcesses starts several processes that each take
// one key many times, waiting their turn, and append their fencing token to a
// Redis list while they hold it. Holds are exclusive, so the list is in
// acquisition order and must be strictly increasing.
func TestFenceIncreasesAcrossProcesses(t *testing.T) {
	const procs, each = 4, 500
	b := redisBackend(t)
	cmds := make([]*exec.Cmd, procs)
	outs := make([]*bytes.Buffer, procs)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"=fencer", "FENCER_REDIS="+b.srv.Addr,
			"FENCER_COUNT="+strconv.Itoa(each))
		outs[i] = new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		require.NoError(t, cmd.Start())
		cmds[i] = cmd
	}
	for i, cmd := range cmds {
		assert.NoError(t, cmd.Wait(), "fencer %d: %s", i, outs[i])
	}
	if t.Failed() {
		t.FailNow()
	}
	fences, err := b.rdb.LRange(context.Background(), fenceList, 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, fences, procs*each, "fences recorded")
	prev := int64(0)
	for i, s := range fences {
		f, err := strconv.ParseInt(s, 10, 64)
		require.NoError(t, err, "fence %d: %q", i, s)
		require.Greater(t, f, prev, "fence %d: not strictly increasing", i)
		prev = f
	}
	t.Logf("%d acquisitions by %d processes, fences %s..%s", len(fences), procs, fences[0], fences[len(fences)-1])
}

// runFencer is the helper process of TestFenceIncreasesAcrossProcesses.
func runFencer() error {
	n, err := strconv.Atoi(os.Getenv("FENCER_COUNT"))
	if err != nil {
		return err
	}
	rdb := newClient(os.Getenv("FENCER_REDIS"))
	defer rdb.Close()
	store := redisstore.New(rdb)
	defer store.Close()
	l, err := throttle.NewLock(store, fenceConfig())
	if err != nil {
		return err
	}
	ctx := context.Background()
	for i := range n {
		err := l.Do(ctx, fenceID, func(ctx context.Context) error {
			return rdb.RPush(ctx, fenceList, throttle.LeaseFrom(ctx).Fence()).Err()
		})
		if err != nil {
			return fmt.Errorf("acquisition %d: %w", i, err)
		}
	}
	return nil
}

// TestFenceIncreasesAcrossGoroutines is the same check within one process,
// for both stores: goroutines with their own Locks take one key in turn.
func TestFenceIncreasesAcrossGoroutines(t *testing.T) {
	const workers, each = 8, 100
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			var mu sync.Mutex
			var fences []int64
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for range workers {
				l := newLock(t, b.store, fenceConfig())
				wg.Go(func() {
					for range each {
						err := l.Do(context.Background(), fenceID, func(ctx context.Context) error {
							f := throttle.LeaseFrom(ctx).Fence()
							mu.Lock()
							fences = append(fences, f)
							mu.Unlock()
							return nil
						})
						if err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			require.Len(t, fences, workers*each, "fences")
			for i := 1; i < len(fences); i++ {
				require.Greater(t, fences[i], fences[i-1], "fence %d: not strictly increasing", i)
			}
		})
	}
}

// TestFenceZeroWithoutConfig checks that a lease has no fencing token unless
// the config asks for one.
func TestFenceZeroWithoutConfig(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			l := newLock(t, b.store, throttle.LockConfig{Name: "nofence", Mode: throttle.Exclusive})
			lease, err := l.Acquire(context.Background(), "x")
			require.NoError(t, err)
			defer lease.Release(context.Background())
			require.Zero(t, lease.Fence(), "fence without LockConfig.Fence")
		})
	}
}

// TestReplayFence checks that ReplayConfig.Fence gives the first request a
// fencing token, and that it grows with every claim of the key.
func TestReplayFence(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			r := newReplay(t, b.store, throttle.ReplayConfig{Name: "rfence", Fence: true, Wait: -1})
			first, _, err := r.Claim(ctx, "x")
			require.NoError(t, err)
			require.Positive(t, first.Fence())
			require.NoError(t, first.Release(ctx))
			second, _, err := r.Claim(ctx, "x")
			require.NoError(t, err)
			defer second.Release(ctx)
			require.Greater(t, second.Fence(), first.Fence())
		})
	}
}
