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

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redisstore"
)

// fencePolicy is the policy of the cross-process fencing test; the helper
// processes and the test share it.
func fencePolicy() throttle.Policy {
	return throttle.Policy{
		Name:     "fence",
		Mode:     throttle.Exclusive,
		LeaseTTL: 5 * time.Second,
		Fence:    true,
		Wait:     time.Minute,
		Backoff:  throttle.ExponentialJitter(time.Millisecond, 20*time.Millisecond),
		Timeout:  time.Second, // a loaded machine must not turn into store errors
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
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("fencer %d: %v\n%s", i, err, outs[i])
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	fences, err := b.rdb.LRange(context.Background(), fenceList, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(fences) != procs*each {
		t.Fatalf("%d fences recorded, want %d", len(fences), procs*each)
	}
	prev := int64(0)
	for i, s := range fences {
		f, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("fence %d: %q", i, s)
		}
		if f <= prev {
			t.Fatalf("fence %d is %d after %d: not strictly increasing", i, f, prev)
		}
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
	l, err := throttle.New(store, fencePolicy())
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
// for both stores: goroutines with their own Limiters take one key in turn.
func TestFenceIncreasesAcrossGoroutines(t *testing.T) {
	const workers, each = 8, 100
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			var mu sync.Mutex
			var fences []int64
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for range workers {
				l := newLimiter(t, b.store, fencePolicy())
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
				t.Fatal(err)
			}
			if len(fences) != workers*each {
				t.Fatalf("%d fences, want %d", len(fences), workers*each)
			}
			for i := 1; i < len(fences); i++ {
				if fences[i] <= fences[i-1] {
					t.Fatalf("fence %d is %d after %d: not strictly increasing", i, fences[i], fences[i-1])
				}
			}
		})
	}
}

// TestFenceZeroWithoutPolicy checks that a lease has no fencing token unless
// the policy asks for one.
func TestFenceZeroWithoutPolicy(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			l := newLimiter(t, b.store, throttle.Policy{Name: "nofence", Mode: throttle.Exclusive})
			lease, err := l.Acquire(context.Background(), "x")
			if err != nil {
				t.Fatal(err)
			}
			defer lease.Release(context.Background())
			if lease.Fence() != 0 {
				t.Fatalf("fence %d without Policy.Fence", lease.Fence())
			}
		})
	}
}
