package throttle_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/redisstore"
)

// crashPolicy is shared by the holder process and the test.
func crashPolicy() throttle.Policy {
	return throttle.Policy{Name: "crash", Mode: throttle.Exclusive, LeaseTTL: time.Second, Timeout: time.Second}
}

// TestKilledHolderFreesKeyAfterTTL runs a holder in another process, kills it
// with SIGKILL while its refresher keeps the key alive, and checks that the
// key stays held for the rest of its TTL and is free soon after: a crashed
// holder blocks others for at most one lease.
func TestKilledHolderFreesKeyAfterTTL(t *testing.T) {
	b := redisBackend(t)
	p := crashPolicy()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=holder", "HOLDER_REDIS="+b.srv.Addr)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := false
	t.Cleanup(func() {
		if !waited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "held" {
		t.Fatalf("holder said %q, %v; want \"held\"", line, err)
	}

	l := newLimiter(t, b.store, p)
	key := l.StoredKey("job")
	ctx := context.Background()
	// Let the holder's refresher extend the key a few times, so that the
	// key outlives its first TTL only thanks to the (soon dead) process.
	time.Sleep(2 * p.LeaseTTL)
	if _, err := l.Acquire(ctx, "job"); !errors.Is(err, throttle.ErrContended) {
		t.Fatalf("key not held by the live holder after 2 TTLs: %v", err)
	}

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waited = true
	killed := time.Now()
	pttl, err := b.rdb.PTTL(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if pttl <= 0 || pttl > p.LeaseTTL {
		t.Fatalf("PTTL right after the kill is %v, want in (0, %v]", pttl, p.LeaseTTL)
	}
	if _, err := l.Acquire(ctx, "job"); !errors.Is(err, throttle.ErrContended) {
		t.Fatalf("key free right after the kill (PTTL was %v): %v", pttl, err)
	}

	var lease *throttle.Lease
	if !waitFor(p.LeaseTTL+5*time.Second, func() bool {
		lease, err = l.Acquire(ctx, "job")
		return err == nil
	}) {
		t.Fatalf("key not free %v after the holder was killed: %v", time.Since(killed), err)
	}
	freed := time.Since(killed)
	defer lease.Release(ctx)
	t.Logf("killed holder's key had PTTL %v, was acquired %v after the kill", pttl, freed)
	// The key may not become free before its TTL ran out. A small margin
	// absorbs the time between the kill and the PTTL reading.
	if freed < pttl-50*time.Millisecond {
		t.Fatalf("key free %v after the kill, before its PTTL %v ran out", freed, pttl)
	}
}

// runHolder is the helper process of TestKilledHolderFreesKeyAfterTTL: it
// takes the key with Do, says "held" and blocks until it is killed.
func runHolder() error {
	rdb := newClient(os.Getenv("HOLDER_REDIS"))
	defer rdb.Close()
	l, err := throttle.New(redisstore.New(rdb), crashPolicy())
	if err != nil {
		return err
	}
	return l.Do(context.Background(), "job", func(ctx context.Context) error {
		fmt.Println("held")
		<-ctx.Done()
		return fmt.Errorf("holder lost its key: %w", context.Cause(ctx))
	})
}
