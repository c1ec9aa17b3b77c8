package redisstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"

	"github.com/stretchr/testify/require"

	"github.com/stretchr/testify/assert"
)

// What a slot migration costs the store (both subtests below check it):
//
//   - Plain acquisitions (SET NX + GET + PTTL, one key), Release and Extend
//     (scripts on one key) never fail: the source serves a key it still
//     has, answers -ASK for one it has not, and the target serves it after
//     ASKING. A key exists on exactly one of the two nodes, so a holder is
//     never forgotten and there is one winner. go-redis sleeps its retry
//     backoff (10-30 ms) before it follows a pipeline's redirection, so
//     plain acquisitions are slower meanwhile (the load test logs the
//     slowest).
//   - Scripted acquisitions (fenced, reentrant, or plain with the script)
//     pass the lock and its fence counter, two keys. A node that holds
//     only one of them, or (the target) none yet, answers -TRYAGAIN until
//     the migration ends: Redis refuses to run a multi-key command on a
//     partial view of the slot. go-redis retries, but only MaxRedirects (3)
//     times, about 100 ms in all, so such an acquisition can fail while
//     its slot migrates. Nothing ran: the key is not taken, and the
//     caller sees a store error (the Lock applies Options.WhenStoreFails).

// testMigrationSteps stops a migration half-way, with some keys of the
// slot moved and others not, and checks each kind of call in that state
// and after the migration ended.
func (env *clusterEnv) testMigrationSteps(t *testing.T) {
	ctx := context.Background()
	s := env.store(t)
	const slot = 100 // on Masters[0] since StartCluster; no other subtest uses it
	from, to := env.Masters[0], env.Masters[1]
	ids := idsInSlot(t, "mig", "steps", slot, 6)
	k := func(i int) string { return storekit.Key("mig", "steps", ids[i]) }
	a, b, f, r, c, d := k(0), k(1), k(2), k(3), k(4), k(5)
	tokA, tokB, tokF, tokR := storekit.NewToken(), storekit.NewToken(), storekit.NewToken(), storekit.NewToken()
	mustAcquire(t, s, store.Request{Key: a, Token: tokA, TTL: time.Minute})
	mustAcquire(t, s, store.Request{Key: b, Token: tokB, TTL: time.Minute})
	fence := mustAcquire(t, s, store.Request{Key: f, Token: tokF, TTL: time.Minute, Fence: true}).Fence
	mustAcquire(t, s, store.Request{Key: r, Token: tokR, TTL: time.Minute, Reentrant: true})

	refused := func(when, key string, fenced bool) {
		t.Helper()
		g, err := s.Acquire(ctx, store.Request{Key: key, Token: storekit.NewToken(), TTL: time.Minute, Fence: fenced})
		if err != nil || g.Acquired || g.Remaining <= 0 {
			t.Fatalf("%s: contender (fenced %v) for the held key %s: %+v, %v; want refused", when, fenced, key, g, err)
		}
	}
	onNode := func(when string, m *redistest.Server, keys ...string) {
		t.Helper()
		// ASKING lets the target of a migration answer for the slot.
		p := env.NodeClient(t, m).Pipeline()
		p.Do(ctx, "ASKING")
		exists := p.Exists(ctx, keys...)
		_, _ = p.Exec(ctx)
		n, err := exists.Result()
		require.NoError(t, err, "%s: %d of %d keys on %s (%v)", when, n, len(keys), m.Addr, err)
		require.EqualValues(t, int64(len(keys)), n, "%s: %d of %d keys on %s (%v)", when, n, len(keys), m.Addr, err)
	}

	m := env.BeginMigration(t, slot, from, to)
	m.Move(t, a, f, storekit.FenceKey(f)) // b and r stay on the source for now
	onNode("half-way", to, a, f, storekit.FenceKey(f))
	onNode("half-way", from, b, r)

	// Single-key calls work on both sides.
	refused("half-way", a, false) // -ASK, then the target has it
	refused("half-way", b, false) // the source has it
	refused("half-way", f, true)  // a script, but the target has both keys
	tokC := storekit.NewToken()
	mustAcquire(t, s, store.Request{Key: c, Token: tokC, TTL: time.Minute}) // new keys go to the target
	onNode("half-way", to, c)
	mustOutcome(t, store.OK)(s.Extend(ctx, a, tokA, time.Minute))
	mustOutcome(t, store.OK)(s.Extend(ctx, b, tokB, time.Minute))
	mustOutcome(t, store.HeldByOther)(s.Release(ctx, a, tokB))
	mustOutcome(t, store.HeldByOther)(s.Release(ctx, b, tokA))
	mustOutcome(t, store.OK)(s.Release(ctx, c, tokC))

	// The acquire script on a lock and counter that no node holds both
	// of: TRYAGAIN (see above), and the migration does not end while
	// go-redis retries. The test accepts success too, should a store learn
	// to avoid it, but a failed call must have taken nothing.
	tolerated := func(what string, g store.Grant, err error) bool {
		t.Helper()
		if err != nil {
			require.True(t, isMigrating(err), "half-way: %s: %v; only TRYAGAIN/ASK/MOVED are expected", what, err)
			t.Logf("half-way: %s: %v (expected: Redis refuses a script on a partly moved slot)", what, err)
			return false
		}
		return true
	}
	if g, err := s.Acquire(ctx, store.Request{Key: b, Token: storekit.NewToken(), TTL: time.Minute, Fence: true}); tolerated("fenced contender for a held key with no counter", g, err) && g.Acquired {
		t.Fatalf("half-way: fenced contender took the held key %s: %+v", b, g)
	}
	holdsR := 1
	if g, err := s.Acquire(ctx, store.Request{Key: r, Token: tokR, TTL: time.Minute, Reentrant: true}); tolerated("re-entry", g, err) {
		if !g.Acquired || g.Holds != 2 {
			t.Fatalf("half-way: re-entry: %+v", g)
		}
		holdsR = 2
	}
	tokD := storekit.NewToken()
	g, err := s.Acquire(ctx, store.Request{Key: d, Token: tokD, TTL: time.Minute, Fence: true})
	heldD := tolerated("fenced acquisition of a free key", g, err) && g.Acquired
	if err == nil && !g.Acquired {
		t.Fatalf("half-way: fenced acquisition of the free key %s refused: %+v", d, g)
	}

	moved := m.MoveAll(t)
	m.Finish(t)
	if moved < 2 {
		t.Fatalf("MoveAll moved %d keys; b and r at least were left", moved)
	}
	if n := countOn(t, env.Cluster, from, slot); n != 0 {
		t.Fatalf("%d keys of the slot left on the source", n)
	}
	// Nothing was lost: every held key is held, on the target, by its
	// owner.
	onNode("after", to, a, b, f, storekit.FenceKey(f), r)
	for _, key := range []string{a, b, f, r} {
		refused("after", key, false)
		refused("after", key, true)
	}
	g = mustAcquire(t, s, store.Request{Key: r, Token: tokR, TTL: time.Minute, Reentrant: true})
	require.EqualValues(t, holdsR+1, g.Holds, "after: re-entry has %d holds, want %d", g.Holds, holdsR+1)
	for range holdsR {
		mustOutcome(t, store.StillHeld)(s.Release(ctx, r, tokR))
	}
	mustOutcome(t, store.OK)(s.Release(ctx, r, tokR))
	mustOutcome(t, store.OK)(s.Release(ctx, a, tokA))
	mustOutcome(t, store.OK)(s.Release(ctx, b, tokB))
	mustOutcome(t, store.OK)(s.Release(ctx, f, tokF))
	// The fence counter moved with its lock and keeps increasing.
	tokF = storekit.NewToken()
	if g := mustAcquire(t, s, store.Request{Key: f, Token: tokF, TTL: time.Minute, Fence: true}); g.Fence <= fence {
		t.Fatalf("after: fence %d after %d", g.Fence, fence)
	}
	mustOutcome(t, store.OK)(s.Release(ctx, f, tokF))
	if heldD {
		mustOutcome(t, store.OK)(s.Release(ctx, d, tokD))
	}
	tokD = storekit.NewToken()
	if g := mustAcquire(t, s, store.Request{Key: d, Token: tokD, TTL: time.Minute, Fence: true}); g.Fence <= 0 {
		t.Fatalf("after: fenced acquisition: %+v", g)
	}
	mustOutcome(t, store.OK)(s.Release(ctx, d, tokD))
}

// countOn returns how many keys of slot the master m holds itself.
func countOn(t testing.TB, c *redistest.Cluster, m *redistest.Server, slot int) int64 {
	t.Helper()
	n, err := c.NodeClient(t, m).ClusterCountKeysInSlot(context.Background(), slot).Result()
	require.NoError(t, err)
	return n
}

// loadOp is one store call of the load test, for the analysis afterwards.
type loadOp struct {
	start, end time.Time
	what       string
	scripted   bool // an acquisition on two keys, which may meet TRYAGAIN
	err        error
}

// testMigrationUnderLoad migrates a slot while workers keep acquiring and
// releasing twelve keys of it and contenders keep trying four keys of it
// that are held throughout. It checks that no call failed except scripted
// acquisitions with TRYAGAIN (or the last redirection) during the
// migration, that each churned key had one holder at a time (checked with a
// compare-and-swap on the winner's side) with increasing fences, that no
// contender got a held key, that the held keys and every filler key arrived
// on the target, and that Redis did redirect calls while it ran (otherwise
// the test proved nothing): ASK for the workers during the migration, and
// MOVED, after it, for a client whose slot map was loaded before it.
func (env *clusterEnv) testMigrationUnderLoad(t *testing.T) {
	ctx := context.Background()
	s := env.store(t)
	const slot = 12000 // on Masters[2] since StartCluster; no other subtest uses it
	from, to := env.Masters[2], env.Masters[0]
	ids := idsInSlot(t, "mig", "load", slot, 16)
	var held, churn []string
	for i, id := range ids {
		if i < 4 {
			held = append(held, storekit.Key("mig", "load", id))
		} else {
			churn = append(churn, storekit.Key("mig", "load", id))
		}
	}
	// Filler keys in the slot make the migration take a few dozen MIGRATE
	// batches, so that the workers run while it is under way.
	const fillers = 400
	tag := "load:" + ids[0]
	if got := redistest.KeySlot("{" + tag + "}"); got != slot {
		t.Fatalf("filler tag in slot %d, want %d", got, slot)
	}
	if _, err := env.cc.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range fillers {
			p.Set(ctx, fmt.Sprintf("filler:{%s}:%d", tag, i), "x", time.Minute)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	heldReqs := []store.Request{
		{Key: held[0]},
		{Key: held[1]},
		{Key: held[2], Fence: true},
		{Key: held[3], Reentrant: true},
	}
	for i := range heldReqs {
		heldReqs[i].Token, heldReqs[i].TTL = storekit.NewToken(), time.Minute
		mustAcquire(t, s, heldReqs[i])
	}

	var (
		stop     atomic.Bool
		nops     atomic.Int64
		mu       sync.Mutex
		ops      []loadOp
		problems []string
		wins     = make([]atomic.Int64, len(churn))
		holder   = make([]atomic.Pointer[string], len(churn))
		fences   = make([]atomic.Int64, len(churn))
	)
	problem := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(problems) < 20 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	record := func(op loadOp) {
		op.end = time.Now()
		nops.Add(1)
		mu.Lock()
		ops = append(ops, op)
		mu.Unlock()
	}
	call := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 5*time.Second) }
	acquire := func(key string, fenced bool) (string, store.Grant, bool) {
		tok := storekit.NewToken()
		op := loadOp{start: time.Now(), what: "acquire " + key, scripted: fenced}
		cctx, cancel := call()
		g, err := s.Acquire(cctx, store.Request{Key: key, Token: tok, TTL: 10 * time.Second, Fence: fenced})
		cancel()
		op.err = err
		record(op)
		if err != nil {
			// A failed acquisition must not have taken the key.
			if out, rerr := s.Release(ctx, key, tok); rerr == nil && out == store.OK {
				problem("acquisition of %s failed (%v) but took the key", key, err)
			}
			return "", g, false
		}
		return tok, g, true
	}
	worker := func(w int) {
		rnd := rand.New(rand.NewPCG(uint64(w), 42))
		for !stop.Load() {
			i, fenced := rnd.IntN(len(churn)), rnd.IntN(4) == 0
			key := churn[i]
			if tok, g, ok := acquire(key, fenced); ok && g.Acquired {
				wins[i].Add(1)
				if !holder[i].CompareAndSwap(nil, &tok) {
					problem("two winners for %s", key)
				}
				if fenced {
					if g.Fence <= fences[i].Load() {
						problem("fence of %s went from %d to %d", key, fences[i].Load(), g.Fence)
					}
					fences[i].Store(g.Fence)
				}
				holder[i].Store(nil) // before the release: then nobody else can have won
				op := loadOp{start: time.Now(), what: "release " + key}
				cctx, cancel := call()
				out, err := s.Release(cctx, key, tok)
				cancel()
				op.err = err
				record(op)
				if err == nil && out != store.OK {
					problem("release of %s by its winner: %v", key, out)
				}
			}
			if rnd.IntN(3) == 0 {
				h := rnd.IntN(len(held))
				if _, g, ok := acquire(held[h], rnd.IntN(2) == 0); ok && g.Acquired {
					problem("a contender took the held key %s", held[h])
				}
			}
		}
	}

	const workers = 8
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { worker(w) })
	}
	stopWorkers := sync.OnceFunc(func() {
		stop.Store(true)
		wg.Wait()
	})
	defer stopWorkers() // also when a step fails the test
	waitOps := func(n int64) {
		deadline := time.Now().Add(10 * time.Second)
		for target := nops.Load() + n; nops.Load() < target && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	// The steps of MigrateSlot, with calls made in each state: keys the
	// workers create while the slot is migrating go to the target; then
	// MoveAll carries over the rest; then, before Finish, every key is on
	// the target while the source still answers for the slot with ASK;
	// after Finish the source answers MOVED.
	waitOps(200) // warm up
	// A second client whose slot map is loaded now, before the migration,
	// and left alone until it is over: its first call after Finish goes
	// to the source, which must answer MOVED. (The workers' client may
	// have reloaded its map by then, after the ASKs, so it may meet none.)
	stale := newClientStore(t, env.Client(t))
	if g, err := stale.Acquire(ctx, store.Request{Key: held[0], Token: storekit.NewToken(), TTL: time.Second}); err != nil || g.Acquired {
		t.Fatalf("the second client took the held key %s: %+v, %v", held[0], g, err)
	}
	before := env.redirects(t)
	migStart := time.Now()
	m := env.BeginMigration(t, slot, from, to)
	waitOps(100)
	moved := m.MoveAll(t)
	waitOps(100)
	m.Finish(t)
	migEnd := time.Now()
	beforeStale := env.redirects(t)
	if g, err := stale.Acquire(ctx, store.Request{Key: held[1], Token: storekit.NewToken(), TTL: time.Second}); err != nil || g.Acquired {
		t.Fatalf("after the migration, the second client took the held key %s: %+v, %v", held[1], g, err)
	}
	afterStale := env.redirects(t)
	waitOps(500)
	stopWorkers()
	after := env.redirects(t)

	for _, p := range problems {
		t.Error(p)
	}
	var during, tolerated, unexpected int
	var slowest [2]time.Duration // of single-key and of scripted calls during the migration
	for _, op := range ops {
		if op.start.Before(migEnd) && op.end.After(migStart) {
			during++
			i := boolToInt(op.scripted)
			slowest[i] = max(slowest[i], op.end.Sub(op.start))
		}
		if op.err == nil {
			continue
		}
		if op.scripted && isMigrating(op.err) && op.start.Before(migEnd) {
			tolerated++
			continue
		}
		if unexpected++; unexpected <= 20 {
			t.Errorf("%s (started %v after the migration began): %v", op.what, op.start.Sub(migStart), op.err)
		}
	}
	if unexpected > 20 {
		t.Errorf("... %d unexpected errors in all", unexpected)
	}
	var total int64
	for i := range wins {
		total += wins[i].Load()
	}
	t.Logf("migration of %d keys took %v; %d calls in all, %d during it (slowest: %v single-key, %v scripted), %d keys acquired; "+
		"%d scripted acquisitions failed with TRYAGAIN/ASK during it; redirections: %d ASK, %d MOVED, %d TRYAGAIN",
		moved, migEnd.Sub(migStart).Round(time.Millisecond), len(ops), during,
		slowest[0].Round(time.Millisecond), slowest[1].Round(time.Millisecond), total, tolerated,
		after["ASK"]-before["ASK"], after["MOVED"]-before["MOVED"], after["TRYAGAIN"]-before["TRYAGAIN"])
	if during < 200 {
		t.Errorf("only %d calls overlapped the migration: the test exercised too little", during)
	}
	assert.NotEqualValues(t, before["ASK"], after["ASK"], "redirections: no ASK; the workers should have met some while the slot was migrating")
	assert.NotEqualValues(t, beforeStale["MOVED"], afterStale["MOVED"], "the client with the map from before the migration was not redirected with MOVED")
	if total < 100 {
		t.Errorf("only %d acquisitions of the churned keys succeeded", total)
	}
	if want := fillers + 5; moved < want { // 4 held keys and a fence counter
		t.Errorf("MigrateSlot moved %d keys, want at least %d", moved, want)
	}

	// After the move: the held keys are on the target, still held by their
	// owners, and every filler key arrived.
	if n := countOn(t, env.Cluster, from, slot); n != 0 {
		t.Fatalf("%d keys of the slot left on the source", n)
	}
	if n := countOn(t, env.Cluster, to, slot); n < fillers+5 {
		t.Fatalf("%d keys of the slot on the target, want at least %d", n, fillers+5)
	}
	for _, req := range heldReqs {
		if g, err := s.Acquire(ctx, store.Request{Key: req.Key, Token: storekit.NewToken(), TTL: time.Second, Fence: true}); err != nil || g.Acquired {
			t.Fatalf("contender for %s after the move: %+v, %v", req.Key, g, err)
		}
		mustOutcome(t, store.OK)(s.Extend(ctx, req.Key, req.Token, time.Minute))
		mustOutcome(t, store.OK)(s.Release(ctx, req.Key, req.Token))
	}
}

var errorstat = regexp.MustCompile(`errorstat_([A-Z]+):count=(\d+)`)

// redirects sums the error replies of every master by kind (ASK, MOVED,
// TRYAGAIN...), from INFO errorstats.
func (env *clusterEnv) redirects(t testing.TB) map[string]int64 {
	t.Helper()
	sum := map[string]int64{}
	for _, m := range env.Masters {
		info, err := env.NodeClient(t, m).Info(context.Background(), "errorstats").Result()
		require.NoError(t, err)
		for _, match := range errorstat.FindAllStringSubmatch(info, -1) {
			n, _ := strconv.ParseInt(match[2], 10, 64)
			sum[match[1]] += n
		}
	}
	return sum
}
