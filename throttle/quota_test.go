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
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// hourly is a rate that refills too slowly for any test to see it: what a
// test admits from a cold key is exactly the burst.
func hourly(burst int) throttle.Rate {
	return throttle.Rate{Limit: burst, Window: time.Hour}
}

// TestQuotaExactUnderContention: 64 goroutines asking 5 times each for a
// cold key get exactly Burst admissions, never more, on both stores.
func TestQuotaExactUnderContention(t *testing.T) {
	const burst, workers, each = 20, 64, 5
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			q := newQuota(t, b.store, throttle.QuotaConfig{Name: "contended", Options: throttle.Options{Timeout: decideTimeout}})
			var allowed, refused atomic.Int32
			var wg sync.WaitGroup
			for range workers {
				wg.Go(func() {
					for range each {
						d, err := q.Allow(context.Background(), "u1", hourly(burst), 1)
						switch {
						case !assert.NoError(t, err):
						case d.Allowed:
							allowed.Add(1)
						default:
							refused.Add(1)
						}
					}
				})
			}
			wg.Wait()
			assert.Equal(t, int32(burst), allowed.Load(), "allowed")
			assert.Equal(t, int32(workers*each-burst), refused.Load(), "refused")
			s := q.Stats()
			assert.Equal(t, uint64(burst), s.Acquired, "Stats %+v", s)
			assert.Equal(t, uint64(workers*each-burst), s.Rejected, "Stats %+v", s)
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
		require.NoError(t, cmd.Start())
		cmds[i] = cmd
	}
	mine, err := spendQuota(b.store, burst)
	require.NoError(t, err)
	total := mine
	for i, cmd := range cmds {
		require.NoError(t, cmd.Wait(), "helper %d: %s", i, outs[i])
		n, err := strconv.Atoi(strings.TrimSpace(outs[i].String()))
		require.NoError(t, err, "helper %d printed %q", i, outs[i])
		total += n
	}
	require.Equal(t, burst, total, "requests allowed across %d processes", procs+1)
}

// spendQuota asks for the shared key 16×8 times at once and returns how
// many requests were allowed.
func spendQuota(st store.Store, burst int) (int, error) {
	q, err := throttle.NewQuota(st, throttle.QuotaConfig{Name: "shared-quota", Options: throttle.Options{Timeout: decideTimeout}})
	if err != nil {
		return 0, err
	}
	var allowed atomic.Int32
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 8 {
				d, err := q.Allow(context.Background(), "u1", hourly(burst), 1)
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

// TestQuotaRefill: a spent quota of 10 per 10 s allows one more request
// once the RetryAfter it gave has passed.
func TestQuotaRefill(t *testing.T) {
	// One every second: the burst of ten and the refusal fit in that time
	// on a loaded machine (one every 100 ms did not, with a Redis clock).
	rate := throttle.Rate{Limit: 10, Window: 10 * time.Second}
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			q := newQuota(t, b.store, throttle.QuotaConfig{Name: "refill", Options: throttle.Options{Timeout: decideTimeout}})
			ctx := context.Background()
			for i := range 10 {
				d, err := q.Allow(ctx, "u1", rate, 1)
				require.NoError(t, err, "request %d", i)
				require.True(t, d.Allowed, "request %d: %+v", i, d)
				require.Equal(t, 9-i, d.Remaining, "request %d: %+v", i, d)
			}
			d, err := q.Allow(ctx, "u1", rate, 1)
			require.NoError(t, err)
			// Refused for at most one interval (1 s).
			require.False(t, d.Allowed, "11th request: %+v", d)
			require.Zero(t, d.Remaining, "11th request: %+v", d)
			require.Positive(t, d.RetryAfter, "11th request: %+v", d)
			require.LessOrEqual(t, d.RetryAfter, time.Second, "11th request: %+v", d)
			require.Greater(t, d.ResetAfter, 9*time.Second, "11th request: %+v", d)
			require.LessOrEqual(t, d.ResetAfter, 10*time.Second, "11th request: %+v", d)
			time.Sleep(d.RetryAfter + 5*time.Millisecond)
			d, err = q.Allow(ctx, "u1", rate, 1)
			require.NoError(t, err, "after RetryAfter")
			require.True(t, d.Allowed, "after RetryAfter: %+v; want allowed", d)
			// Nothing left, or one more unit when this call came a second late.
			require.LessOrEqual(t, d.Remaining, 1, "after RetryAfter: %+v", d)
		})
	}
}

// TestQuotaCost: costs above 1, peeks and refunds, and costs out of range
// as ErrInvalid rather than refusals.
func TestQuotaCost(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			q := newQuota(t, b.store, throttle.QuotaConfig{Name: "cost", Options: throttle.Options{Timeout: decideTimeout}})
			ctx := context.Background()
			steps := []struct {
				cost      int
				allowed   bool
				remaining int
			}{
				{4, true, 6}, {6, true, 0}, {1, false, 0}, {0, true, 0}, {-3, true, 3}, {4, false, 3}, {3, true, 0},
			}
			for i, s := range steps {
				d, err := q.Allow(ctx, "u1", hourly(10), s.cost)
				require.NoError(t, err, "step %d, cost %d", i, s.cost)
				require.Equal(t, s.allowed, d.Allowed, "step %d, cost %d: %+v", i, s.cost, d)
				require.Equal(t, s.remaining, d.Remaining, "step %d, cost %d: %+v", i, s.cost, d)
			}
			for _, cost := range []int{11, -11, 1 << 40} {
				d, err := q.Allow(ctx, "u1", hourly(10), cost)
				isOnly(t, err, store.ErrInvalid)
				require.Zero(t, d, "cost %d: a decision with the error", cost)
			}
			s := q.Stats()
			assert.Equal(t, uint64(3), s.Acquired, "Stats %+v: peeks and refunds must not count", s)
			assert.Equal(t, uint64(2), s.Rejected, "Stats %+v: peeks and refunds must not count", s)
		})
	}
}

// TestQuotaRates: Allow and Admit refuse a rate that no store could serve
// with ErrInvalid, and count it as no decision; a Burst of 0 means Limit.
func TestQuotaRates(t *testing.T) {
	ctx := context.Background()
	q := newQuota(t, memstore.New(), throttle.QuotaConfig{Name: "q"})
	r := func(limit int, window time.Duration, burst int) throttle.Rate {
		return throttle.Rate{Limit: limit, Window: window, Burst: burst}
	}
	for name, rate := range map[string]throttle.Rate{
		"no limit":            r(0, time.Minute, 0),
		"negative limit":      r(-1, time.Minute, 0),
		"negative burst":      r(10, time.Minute, -1),
		"no window":           r(10, 0, 0),
		"negative window":     r(10, -time.Minute, 0),
		"above 1/µs":          r(1_000_000, 500*time.Millisecond, 0),
		"tolerance 200 years": r(1, 200*365*24*time.Hour, 0),
		"huge burst":          r(1, time.Hour, 1<<40),
	} {
		t.Run(name, func(t *testing.T) {
			d, err := q.Allow(ctx, "u1", rate, 1)
			isOnly(t, err, store.ErrInvalid)
			require.Zero(t, d)
			require.ErrorContains(t, err, `"q"`, "the error names the quota")
			dp, err := q.Admit(ctx, "u1", rate, 1)
			isOnly(t, err, store.ErrInvalid)
			require.Nil(t, dp)
		})
	}
	s := q.Stats()
	assert.Zero(t, s.Acquired+s.Rejected+s.StoreErrors+s.FailedOpen, "Stats %+v", s)

	// Burst 0 is Limit: a peek at a cold key finds Limit left.
	d, err := q.Allow(ctx, "u1", r(10, time.Minute, 0), 0)
	require.NoError(t, err)
	require.Equal(t, 10, d.Remaining, "default Burst, want Limit (10)")
}

// TestQuotaStores: NewQuota refuses a store, or a FailOver Fallback, that
// keeps no quotas, saying what it lacks.
func TestQuotaStores(t *testing.T) {
	_, err := throttle.NewQuota(lockOnly{memstore.New()}, throttle.QuotaConfig{Name: "q"})
	isOnly(t, err, store.ErrInvalid)
	require.ErrorContains(t, err, "store.Quota", "the error does not say what the store lacks")

	_, err = throttle.NewQuota(memstore.New(), throttle.QuotaConfig{Name: "q",
		Options: throttle.Options{WhenStoreFails: throttle.FailOver, Fallback: lockOnly{memstore.New()}}})
	isOnly(t, err, store.ErrInvalid)
	require.ErrorContains(t, err, "Fallback")
}

// lockOnly is a store that keeps locks but no quotas.
type lockOnly struct{ store.Store }

// TestQuotaWait: with QuotaConfig.Wait, a refused request sleeps for the
// refill when it comes within the wait, and is refused at once otherwise.
func TestQuotaWait(t *testing.T) {
	ctx := context.Background()
	rate := throttle.Rate{Limit: 20, Window: time.Second, Burst: 1}
	q := newQuota(t, memstore.New(), throttle.QuotaConfig{Name: "wait", Wait: 5 * time.Second})
	for i := range 3 {
		d, err := q.Allow(ctx, "u1", rate, 1)
		require.NoError(t, err, "request %d", i)
		require.True(t, d.Allowed, "request %d: %+v; want allowed after a wait", i, d)
	}
	short := newQuota(t, memstore.New(), throttle.QuotaConfig{Name: "wait", Wait: time.Millisecond})
	_, _ = short.Allow(ctx, "u1", rate, 1)
	start := time.Now()
	d, err := short.Allow(ctx, "u1", rate, 1)
	require.NoError(t, err, "short wait")
	require.False(t, d.Allowed, "short wait: %+v; want refused", d)
	require.Greater(t, d.RetryAfter, time.Millisecond, "short wait: %+v", d)
	require.LessOrEqual(t, time.Since(start), d.RetryAfter, "a refusal that could not end within the wait slept anyway")

	// The context bounds the wait.
	rate.Window = time.Hour
	long := newQuota(t, memstore.New(), throttle.QuotaConfig{Name: "wait", Wait: time.Hour})
	_, _ = long.Allow(ctx, "u1", rate, 1)
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	_, err = long.Allow(cctx, "u1", rate, 1)
	isOnly(t, err, context.DeadlineExceeded)
}

// quiet keeps expected store-error warnings out of the test output.
var quiet = slog.New(slog.DiscardHandler)

// failingQuota is a store whose quota calls fail, for the fail modes.
type failingQuota struct {
	store.Store
	calls atomic.Int32
}

var errQuotaDown = errors.New("dial tcp 10.0.0.9:6379: connection refused")

func (s *failingQuota) AllowN(context.Context, string, store.Rate, int) (store.Decision, error) {
	s.calls.Add(1)
	return store.Decision{}, errQuotaDown
}

func (s *failingQuota) AllowAll(context.Context, []store.Limit, int) ([]store.Decision, error) {
	s.calls.Add(1)
	return nil, errQuotaDown
}

// TestQuotaStoreFails: Allow reports ErrStore; Admit fails open (nil, nil)
// or closed (ErrStore) as the config says; FailOver decides in the
// fallback, which keeps its own exact count.
func TestQuotaStoreFails(t *testing.T) {
	ctx := context.Background()
	rate := hourly(3)
	c := throttle.QuotaConfig{Name: "down", Options: throttle.Options{Logger: quiet}}

	q := newQuota(t, &failingQuota{Store: memstore.New()}, c)
	_, err := q.Allow(ctx, "u1", rate, 1)
	isOnly(t, err, throttle.ErrStore)
	require.ErrorIs(t, err, errQuotaDown, "the store's error is not wrapped")
	d, err := q.Admit(ctx, "u1", rate, 1)
	require.NoError(t, err, "Admit failing open")
	require.Nil(t, d, "Admit failing open")
	require.Equal(t, uint64(1), q.Stats().FailedOpen, "Stats %+v", q.Stats())

	c.WhenStoreFails = throttle.FailClosed
	q = newQuota(t, &failingQuota{Store: memstore.New()}, c)
	d, err = q.Admit(ctx, "u1", rate, 1)
	require.Nil(t, d, "Admit failing closed gave a decision")
	isOnly(t, err, throttle.ErrStore)

	c.WhenStoreFails, c.Fallback = throttle.FailOver, memstore.New()
	st := &failingQuota{Store: memstore.New()}
	q = newQuota(t, st, c)
	allowed := 0
	for range 10 {
		d, err := q.Admit(ctx, "u1", rate, 1)
		switch {
		case err == nil && d.Allowed:
			allowed++
		default:
			require.ErrorIs(t, err, throttle.ErrContended, "Admit under FailOver: %v", d)
		}
	}
	s := q.Stats()
	require.Equal(t, 3, allowed, "allowed under FailOver, want 3 from the fallback")
	require.Equal(t, uint64(3), s.Fallback, "Stats %+v", s)
	require.Equal(t, uint64(7), s.Rejected, "Stats %+v", s)
	// After three failures in a row the store is skipped for a while.
	require.Less(t, st.calls.Load(), int32(10), "the failing store was asked in every one of 10 requests")
}

// TestQuotaAdmit: an allowed request gets its decision; a refused one its
// decision and a ContendedError saying when to retry.
func TestQuotaAdmit(t *testing.T) {
	ctx := context.Background()
	q := newQuota(t, memstore.New(), throttle.QuotaConfig{Name: "admit"})
	rate := hourly(2)
	for i := range 2 {
		d, err := q.Admit(ctx, "u1", rate, 1)
		require.NoError(t, err, "request %d", i)
		require.True(t, d.Allowed, "request %d: %+v", i, d)
		require.Equal(t, 1-i, d.Remaining, "request %d: %+v", i, d)
	}
	d, err := q.Admit(ctx, "u1", rate, 1)
	isOnly(t, err, throttle.ErrContended)
	var ce *throttle.ContendedError
	require.ErrorAs(t, err, &ce, "third request: want refused with a ContendedError")
	require.NotNil(t, d, "third request: a refusal comes with its decision")
	require.False(t, d.Allowed, "third request: %+v", d)
	require.Positive(t, ce.RetryAfter)
	require.Equal(t, d.RetryAfter, ce.RetryAfter)

	// A free request is no way past a spent quota.
	d, err = q.Admit(ctx, "u1", rate, 0)
	require.ErrorAs(t, err, &ce, "cost 0 on a spent quota: want refused until the next refill")
	require.False(t, d.Allowed, "cost 0 on a spent quota: %+v", d)
	require.Positive(t, ce.RetryAfter)
	require.LessOrEqual(t, ce.RetryAfter, time.Hour/2)

	d, err = q.Admit(ctx, "u2", rate, 0)
	require.NoError(t, err, "cost 0 on a full quota")
	require.True(t, d.Allowed, "cost 0 on a full quota: %+v", d)
	require.Equal(t, 2, d.Remaining, "cost 0 on a full quota: %+v", d)
}

// TestQuotaRatePerCall: the rate is a value of each call, so one Quota
// serves requests of different rates (a plan's, a tier's), each key
// counted against the rate it is asked with.
func TestQuotaRatePerCall(t *testing.T) {
	ctx := context.Background()
	q := newQuota(t, memstore.New(), throttle.QuotaConfig{Name: "plans"})
	spend := func(id string, rate throttle.Rate) int {
		n := 0
		for range 20 {
			d, err := q.Allow(ctx, id, rate, 1)
			require.NoError(t, err)
			if d.Allowed {
				n++
			}
		}
		return n
	}
	require.Equal(t, 3, spend("free-user", hourly(3)))
	require.Equal(t, 10, spend("paid-user", hourly(10)))
}

// TestQuotaServerClock: what a Quota sends Redis for a decision holds no
// time of the caller's: the script reads the server's TIME, so instances
// whose clocks disagree still share one quota. Two quotas on two
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
	st := redisstore.New(spy)
	t.Cleanup(func() { _ = st.Close() }) // its near cache's tracking goroutine
	a := newQuota(t, st, throttle.QuotaConfig{Name: "clock"})
	other := newQuota(t, b.store, throttle.QuotaConfig{Name: "clock"})
	ctx := context.Background()
	for i := range 8 {
		q := a
		if i%2 == 1 {
			q = other
		}
		d, err := q.Allow(ctx, "u1", hourly(6), 1)
		require.NoError(t, err, "request %d", i)
		require.Equal(t, i < 6, d.Allowed, "request %d: %+v", i, d)
		require.Equal(t, max(5-i, 0), d.Remaining, "request %d: %+v", i, d)
	}
	mu.Lock()
	defer mu.Unlock()
	// EVALSHA sha 1 key T burst cost: nothing else.
	require.Len(t, sent, 7, "quota command %v: want EVALSHA with the key, T, burst and cost alone", sent)
	require.Equal(t, "evalsha", fmt.Sprint(sent[0]), "quota command %v", sent)
	now := time.Now()
	for _, arg := range sent[3:] {
		n, ok := arg.(int64)
		require.False(t, ok && n > now.Add(-time.Hour).Unix() && n < now.Add(time.Hour).UnixMicro(),
			"argument %d of %v looks like the caller's clock", n, sent)
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
