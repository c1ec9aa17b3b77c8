package throttle_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// hourly is a quota that refills too slowly for any test to see it: what
// a test admits from a cold key is exactly the burst.
func hourly(name string, burst int) throttle.Policy {
	return throttle.Policy{Name: name, Mode: throttle.Quota, Limit: burst, Window: time.Hour}
}

// TestQuotaExactUnderContention: 64 goroutines asking 5 times each for a
// cold key get exactly Burst admissions, never more, on both stores.
func TestQuotaExactUnderContention(t *testing.T) {
	const burst, workers, each = 20, 64, 5
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			l := newLimiter(t, b.store, hourly("contended", burst))
			var allowed, refused atomic.Int32
			var wg sync.WaitGroup
			for range workers {
				wg.Go(func() {
					for range each {
						d, err := l.Allow(context.Background(), "u1")
						switch {
						case err != nil:
							t.Error(err)
						case d.Allowed:
							allowed.Add(1)
						default:
							refused.Add(1)
						}
					}
				})
			}
			wg.Wait()
			if a, r := allowed.Load(), refused.Load(); a != burst || r != workers*each-burst {
				t.Fatalf("%d allowed, %d refused; want %d and %d", a, r, burst, workers*each-burst)
			}
			if s := l.Stats(); s.Acquired != burst || s.Rejected != workers*each-burst {
				t.Fatalf("Stats %+v", s)
			}
		})
	}
}

// TestQuotaAcrossProcesses: three processes and this one, each with 16
// goroutines, share one key's quota on one Redis exactly.
func TestQuotaAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("needs redis-server")
	}
	const procs, burst = 3, 25
	b := redisBackend(t)
	cmds := make([]*exec.Cmd, procs)
	outs := make([]*bytes.Buffer, procs)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"=quota", "QUOTA_REDIS="+b.srv.Addr, "QUOTA_BURST="+strconv.Itoa(burst))
		outs[i] = new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	mine, err := spendQuota(b.store, burst)
	if err != nil {
		t.Fatal(err)
	}
	total := mine
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper %d: %v\n%s", i, err, outs[i])
		}
		n, err := strconv.Atoi(strings.TrimSpace(outs[i].String()))
		if err != nil {
			t.Fatalf("helper %d printed %q", i, outs[i])
		}
		total += n
	}
	if total != burst {
		t.Fatalf("%d requests allowed across %d processes, want exactly %d", total, procs+1, burst)
	}
}

// spendQuota asks for the shared key 16×8 times at once and returns how
// many requests were allowed.
func spendQuota(st throttle.Store, burst int) (int, error) {
	l, err := throttle.New(st, hourly("shared-quota", burst))
	if err != nil {
		return 0, err
	}
	var allowed atomic.Int32
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 8 {
				d, err := l.Allow(context.Background(), "u1")
				if err != nil {
					errs <- err
					return
				}
				if d.Allowed {
					allowed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return int(allowed.Load()), <-errs
}

// runQuota is the helper process of TestQuotaAcrossProcesses.
func runQuota() error {
	burst, err := strconv.Atoi(os.Getenv("QUOTA_BURST"))
	if err != nil {
		return err
	}
	rdb := newClient(os.Getenv("QUOTA_REDIS"))
	defer rdb.Close()
	st := redisstore.New(rdb)
	defer st.Close()
	n, err := spendQuota(st, burst)
	if err != nil {
		return err
	}
	fmt.Println(n)
	return nil
}

// TestQuotaRefill: a spent quota of 10 per second allows one more request
// once the RetryAfter it gave has passed.
func TestQuotaRefill(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			l := newLimiter(t, b.store, throttle.Policy{Name: "refill", Mode: throttle.Quota, Limit: 10, Window: time.Second})
			ctx := context.Background()
			for i := range 10 {
				if d, err := l.Allow(ctx, "u1"); err != nil || !d.Allowed || d.Remaining != 9-i {
					t.Fatalf("request %d: %+v, %v", i, d, err)
				}
			}
			d, err := l.Allow(ctx, "u1")
			if err != nil || d.Allowed || d.Remaining != 0 || d.RetryAfter <= 0 || d.RetryAfter > 100*time.Millisecond ||
				d.ResetAfter <= 900*time.Millisecond || d.ResetAfter > time.Second {
				t.Fatalf("11th request: %+v, %v; want refused for at most one interval (100ms)", d, err)
			}
			time.Sleep(d.RetryAfter + 5*time.Millisecond)
			if d, err := l.Allow(ctx, "u1"); err != nil || !d.Allowed || d.Remaining != 0 {
				t.Fatalf("after RetryAfter: %+v, %v; want allowed with nothing left", d, err)
			}
		})
	}
}

// TestQuotaCost: costs above 1, peeks and refunds, and costs out of range
// as ErrInvalid rather than refusals.
func TestQuotaCost(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			l := newLimiter(t, b.store, hourly("cost", 10))
			ctx := context.Background()
			steps := []struct {
				cost      int
				allowed   bool
				remaining int
			}{
				{4, true, 6}, {6, true, 0}, {1, false, 0}, {0, true, 0}, {-3, true, 3}, {4, false, 3}, {3, true, 0},
			}
			for i, s := range steps {
				d, err := l.AllowN(ctx, "u1", s.cost)
				if err != nil || d.Allowed != s.allowed || d.Remaining != s.remaining {
					t.Fatalf("step %d, cost %d: %+v, %v; want allowed=%v remaining=%d", i, s.cost, d, err, s.allowed, s.remaining)
				}
			}
			for _, cost := range []int{11, -11, 1 << 40} {
				d, err := l.AllowN(ctx, "u1", cost)
				isOnly(t, err, throttle.ErrInvalid)
				if d != (throttle.Decision{}) {
					t.Fatalf("cost %d: decision %+v with the error", cost, d)
				}
			}
			if s := l.Stats(); s.Acquired != 3 || s.Rejected != 2 {
				t.Fatalf("Stats %+v: peeks and refunds must not count", s)
			}
		})
	}
}

// TestQuotaPolicyChecks: New refuses quota fields that no store could
// serve, and quota fields in other modes, with ErrInvalid.
func TestQuotaPolicyChecks(t *testing.T) {
	q := func(limit int, window time.Duration, burst int) throttle.Policy {
		return throttle.Policy{Name: "q", Mode: throttle.Quota, Limit: limit, Window: window, Burst: burst}
	}
	for name, p := range map[string]throttle.Policy{
		"no limit":             q(0, time.Minute, 0),
		"negative limit":       q(-1, time.Minute, 0),
		"negative burst":       q(10, time.Minute, -1),
		"negative window":      q(10, -time.Minute, 0),
		"above 1/µs":           q(1_000_000, 500*time.Millisecond, 0),
		"tolerance 200 years":  q(1, 200*365*24*time.Hour, 0),
		"huge burst":           q(1, time.Hour, 1<<40),
		"limit in dedupe":      {Name: "d", Limit: 5},
		"burst in cooldown":    {Name: "c", Mode: throttle.Cooldown, Burst: 5},
		"failures in dedupe":   {Name: "d", CountOnlyFailures: true},
		"unknown mode":         {Name: "u", Mode: throttle.Replay + 1},
		"fallback sans quotas": {Name: "q", Mode: throttle.Quota, Limit: 1, WhenStoreFails: throttle.FailOver, Fallback: lockOnly{memstore.New()}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := throttle.New(memstore.New(), p)
			isOnly(t, err, throttle.ErrInvalid)
		})
	}
	_, err := throttle.New(lockOnly{memstore.New()}, q(10, time.Minute, 0))
	isOnly(t, err, throttle.ErrInvalid)
	if !strings.Contains(err.Error(), "store.Quota") {
		t.Fatalf("error %q does not say what the store lacks", err)
	}
	l := newLimiter(t, memstore.New(), q(10, time.Minute, 0))
	if got := l.Policy().Burst; got != 10 {
		t.Fatalf("default Burst %d, want Limit (10)", got)
	}
}

// lockOnly is a store that keeps locks but no quotas.
type lockOnly struct{ throttle.Store }

// TestQuotaWrongCalls: a Quota policy takes no locks, and a lock policy
// decides no quotas.
func TestQuotaWrongCalls(t *testing.T) {
	ctx := context.Background()
	ql := newLimiter(t, memstore.New(), hourly("q", 5))
	if _, err := ql.Acquire(ctx, "u1"); err == nil {
		t.Fatal("Acquire on a Quota policy")
	} else {
		isOnly(t, err, throttle.ErrInvalid)
	}
	if err := ql.Do(ctx, "u1", func(context.Context) error { return nil }); !errors.Is(err, throttle.ErrInvalid) {
		t.Fatalf("Do on a Quota policy: %v", err)
	}
	ll := newLimiter(t, memstore.New(), throttle.Policy{Name: "d"})
	_, err := ll.Allow(ctx, "u1")
	isOnly(t, err, throttle.ErrInvalid)
}

// TestQuotaWait: with Policy.Wait, a refused request sleeps for the refill
// when it comes within the wait, and is refused at once otherwise.
func TestQuotaWait(t *testing.T) {
	ctx := context.Background()
	p := throttle.Policy{Name: "wait", Mode: throttle.Quota, Limit: 20, Window: time.Second, Burst: 1, Wait: 5 * time.Second}
	l := newLimiter(t, memstore.New(), p)
	for i := range 3 {
		if d, err := l.Allow(ctx, "u1"); err != nil || !d.Allowed {
			t.Fatalf("request %d: %+v, %v; want allowed after a wait", i, d, err)
		}
	}
	p.Wait = time.Millisecond
	short := newLimiter(t, memstore.New(), p)
	_, _ = short.Allow(ctx, "u1")
	start := time.Now()
	d, err := short.Allow(ctx, "u1")
	if err != nil || d.Allowed || d.RetryAfter <= time.Millisecond {
		t.Fatalf("short wait: %+v, %v; want refused", d, err)
	}
	if time.Since(start) > d.RetryAfter {
		t.Fatal("a refusal that could not end within the wait slept anyway")
	}
	// The context bounds the wait.
	p.Wait, p.Window = time.Hour, time.Hour
	long := newLimiter(t, memstore.New(), p)
	_, _ = long.Allow(ctx, "u1")
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	_, err = long.Allow(cctx, "u1")
	isOnly(t, err, context.DeadlineExceeded)
}

// quiet keeps expected store-error warnings out of the test output.
var quiet = slog.New(slog.DiscardHandler)

// failingQuota is a store whose quota calls fail, for the fail modes.
type failingQuota struct {
	throttle.Store
	calls atomic.Int32
}

var errQuotaDown = errors.New("dial tcp 10.0.0.9:6379: connection refused")

func (s *failingQuota) AllowN(context.Context, string, store.Rate, int) (store.Decision, error) {
	s.calls.Add(1)
	return store.Decision{}, errQuotaDown
}

// TestQuotaStoreFails: AllowN reports ErrStore; AdmitN fails open (nil,
// nil) or closed (ErrStore) as the policy says; FailOver decides in the
// fallback, which keeps its own exact count.
func TestQuotaStoreFails(t *testing.T) {
	ctx := context.Background()
	p := hourly("down", 3)
	p.Logger = quiet

	l := newLimiter(t, &failingQuota{Store: memstore.New()}, p)
	_, err := l.Allow(ctx, "u1")
	isOnly(t, err, throttle.ErrStore)
	if !errors.Is(err, errQuotaDown) {
		t.Fatalf("%v does not wrap the store's error", err)
	}
	d, err := l.AdmitN(ctx, "u1", 1)
	if d != nil || err != nil || l.Stats().FailedOpen != 1 {
		t.Fatalf("AdmitN failing open = %v, %v; Stats %+v", d, err, l.Stats())
	}

	p.WhenStoreFails = throttle.FailClosed
	l = newLimiter(t, &failingQuota{Store: memstore.New()}, p)
	d, err = l.AdmitN(ctx, "u1", 1)
	if d != nil {
		t.Fatalf("AdmitN failing closed gave a decision %+v", d)
	}
	isOnly(t, err, throttle.ErrStore)

	p.WhenStoreFails, p.Fallback = throttle.FailOver, memstore.New()
	st := &failingQuota{Store: memstore.New()}
	l = newLimiter(t, st, p)
	allowed := 0
	for range 10 {
		d, err := l.AdmitN(ctx, "u1", 1)
		switch {
		case err == nil && d.Allowed:
			allowed++
		case !errors.Is(err, throttle.ErrContended):
			t.Fatalf("AdmitN under FailOver: %v, %v", d, err)
		}
	}
	if s := l.Stats(); allowed != 3 || s.Fallback != 3 || s.Rejected != 7 {
		t.Fatalf("%d allowed under FailOver, Stats %+v; want 3 from the fallback", allowed, s)
	}
	// After three failures in a row the store is skipped for a while.
	if n := st.calls.Load(); n >= 10 {
		t.Fatalf("the failing store was asked %d times in 10 requests", n)
	}
}

// TestQuotaAdmitN: an allowed request gets its decision; a refused one its
// decision and a ContendedError saying when to retry.
func TestQuotaAdmitN(t *testing.T) {
	ctx := context.Background()
	l := newLimiter(t, memstore.New(), hourly("admit", 2))
	for i := range 2 {
		if d, err := l.AdmitN(ctx, "u1", 1); err != nil || !d.Allowed || d.Remaining != 1-i {
			t.Fatalf("request %d: %+v, %v", i, d, err)
		}
	}
	d, err := l.AdmitN(ctx, "u1", 1)
	var ce *throttle.ContendedError
	if !errors.As(err, &ce) || d == nil || d.Allowed || ce.RetryAfter != d.RetryAfter || ce.RetryAfter <= 0 {
		t.Fatalf("third request: %+v, %v; want refused with a ContendedError", d, err)
	}
	isOnly(t, err, throttle.ErrContended)
	// A free request is no way past a spent quota.
	d, err = l.AdmitN(ctx, "u1", 0)
	if !errors.As(err, &ce) || d.Allowed || ce.RetryAfter <= 0 || ce.RetryAfter > time.Hour/2 {
		t.Fatalf("cost 0 on a spent quota: %+v, %v; want refused until the next refill", d, err)
	}
	if d, err := l.AdmitN(ctx, "u2", 0); err != nil || !d.Allowed || d.Remaining != 2 {
		t.Fatalf("cost 0 on a full quota: %+v, %v", d, err)
	}
}

// TestQuotaServerClock: what a Limiter sends Redis for a decision holds no
// time of the caller's: the script reads the server's TIME, so instances
// whose clocks disagree still share one quota. Two limiters on two
// connections interleave and agree exactly.
func TestQuotaServerClock(t *testing.T) {
	if testing.Short() {
		t.Skip("needs redis-server")
	}
	b := redisBackend(t)
	var sent []any
	var mu sync.Mutex
	spy := newClient(b.srv.Addr)
	spy.AddHook(argsHook{record: func(args []any) {
		if name := fmt.Sprint(args[0]); name != "evalsha" && name != "eval" {
			return // the store's start-up checks
		}
		mu.Lock()
		defer mu.Unlock()
		sent = args
	}})
	t.Cleanup(func() { _ = spy.Close() })
	a := newLimiter(t, redisstore.New(spy), hourly("clock", 6))
	other := newLimiter(t, b.store, hourly("clock", 6))
	ctx := context.Background()
	for i := range 8 {
		l := a
		if i%2 == 1 {
			l = other
		}
		d, err := l.Allow(ctx, "u1")
		if err != nil || d.Allowed != (i < 6) || d.Remaining != max(5-i, 0) {
			t.Fatalf("request %d: %+v, %v", i, d, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	// EVALSHA sha 1 key T burst cost: nothing else.
	if len(sent) != 7 || fmt.Sprint(sent[0]) != "evalsha" {
		t.Fatalf("quota command %v: want EVALSHA with the key, T, burst and cost alone", sent)
	}
	now := time.Now()
	for _, arg := range sent[3:] {
		if n, ok := arg.(int64); ok && (n > now.Add(-time.Hour).Unix() && n < now.Add(time.Hour).UnixMicro()) {
			t.Fatalf("argument %d of %v looks like the caller's clock", n, sent)
		}
	}
}

// argsHook hands the arguments of every command to record.
type argsHook struct{ record func([]any) }

func (argsHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h argsHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.record(cmd.Args())
		return next(ctx, cmd)
	}
}

func (h argsHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
