package throttle_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redisstore"
)

// crashConfig is shared by the holder process and the test.
// startHelper runs this test binary as the helper process mode (see
// TestMain), against the Redis at addr, and returns it with the first line
// it printed; the test's cleanup kills it unless the test waited for it.
func startHelper(t *testing.T, mode, addr string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, strings.ToUpper(mode)+"_REDIS="+addr)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "the %s said %q", mode, line)
	return cmd, strings.TrimSpace(line)
}

func crashConfig() throttle.LockConfig {
	return throttle.LockConfig{Name: "crash", Mode: throttle.Exclusive, TTL: time.Second,
		Options: throttle.Options{Timeout: time.Second}}
}

// TestKilledHolderFreesKeyAfterTTL runs a holder in another process, kills it
// with SIGKILL while its refresher keeps the key alive, and checks that the
// key stays held for the rest of its TTL and is free soon after: a crashed
// holder blocks others for at most one lease.
func TestKilledHolderFreesKeyAfterTTL(t *testing.T) {
	b := redisBackend(t)
	c := crashConfig()
	cmd, line := startHelper(t, "holder", b.srv.Addr)
	require.Equal(t, "held", line, "the holder's line")

	l := newLock(t, b.store, c)
	key := l.StoredKey("job")
	ctx := context.Background()
	// Let the holder's refresher extend the key a few times, so that the
	// key outlives its first TTL only thanks to the (soon dead) process.
	time.Sleep(2 * c.TTL)
	_, err := l.Acquire(ctx, "job")
	require.ErrorIs(t, err, throttle.ErrContended, "key not held by the live holder after 2 TTLs")

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	killed := time.Now()
	pttl, err := b.rdb.PTTL(ctx, key).Result()
	require.NoError(t, err)
	require.Positive(t, pttl, "PTTL right after the kill")
	require.LessOrEqual(t, pttl, c.TTL, "PTTL right after the kill")
	_, err = l.Acquire(ctx, "job")
	require.ErrorIs(t, err, throttle.ErrContended, "key free right after the kill (PTTL was %v)", pttl)

	var lease *throttle.Lease
	require.True(t, waitFor(c.TTL+5*time.Second, func() bool {
		lease, err = l.Acquire(ctx, "job")
		return err == nil
	}), "key not free %v after the holder was killed: %v", time.Since(killed), err)
	freed := time.Since(killed)
	defer lease.Release(ctx)
	t.Logf("killed holder's key had PTTL %v, was acquired %v after the kill", pttl, freed)
	// The key may not become free before its TTL ran out. A small margin
	// absorbs the time between the kill and the PTTL reading.
	require.GreaterOrEqual(t, freed, pttl-50*time.Millisecond, "key free after the kill, before its PTTL %v ran out", pttl)
}

// runHolder is the helper process of TestKilledHolderFreesKeyAfterTTL: it
// takes the key with Do, says "held" and blocks until it is killed.
func runHolder() error {
	rdb := newClient(os.Getenv("HOLDER_REDIS"))
	defer rdb.Close()
	l, err := throttle.NewLock(redisstore.New(rdb), crashConfig())
	if err != nil {
		return err
	}
	return l.Do(context.Background(), "job", func(ctx context.Context) error {
		fmt.Println("held")
		<-ctx.Done()
		return fmt.Errorf("holder lost its key: %w", context.Cause(ctx))
	})
}
