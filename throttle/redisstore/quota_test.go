package redisstore_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/internal/redistest"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"

	"github.com/stretchr/testify/require"

	"github.com/stretchr/testify/assert"
)

// quotaClock is a fake clock shared by both stores of the model test. It
// starts on a whole second and moves by whole microseconds, the stores'
// unit, so that both see the same microsecond and decide exactly alike.
type quotaClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *quotaClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *quotaClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type quotaStep struct {
	advance time.Duration
	cost    int
	want    *store.Decision // when set, both stores must decide it
}

// TestQuotaModel drives the same sequence of (advance the clock, AllowN)
// against memstore, with a fake clock, and redisstore, with the fake time
// passed to the script instead of TIME, and requires equal decisions and
// errors at every step. Each rate runs a scripted part (bursts, refills,
// cost above 1, peeks, costs above Burst, refunds, idling past the reset)
// and a random part, with costs from -Burst (refunds) to Burst+1. After
// each charge, and each refund that leaves the quota short of full, it also
// checks that the Redis key expires at the TAT: the test clock's now plus
// the reset, rounded up to a millisecond (both scripts set the expiry as a
// time under the test clock, which stands in 2030, so no key expires in
// real time between two steps however loaded the machine); after a refund
// that fills the quota, that the key is gone.
// A last part refunds on a quota overspent under a smaller Rate.
func TestQuotaModel(t *testing.T) {
	clk := &quotaClock{now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
	rs, _, c := newStore(t, redisstore.WithQuotaClock(clk.Now))
	ms := memstore.New(memstore.WithClock(clk.Now))
	ctx := context.Background()

	rates := []store.Rate{
		{Limit: 4, Window: time.Second, Burst: 4},             // T = 250ms: gcra_ms.lua
		{Limit: 3, Window: time.Second, Burst: 5},             // T = 333333µs, not a whole ms: gcra.lua
		{Limit: 10, Window: time.Minute, Burst: 1},            // no burst; gcra_ms.lua
		{Limit: 1000, Window: 7 * time.Millisecond, Burst: 3}, // T = 7µs: gcra.lua
		{Limit: 1000, Window: time.Second, Burst: 2},          // T = 1ms, the shortest for gcra_ms.lua
	}
	rng := rand.New(rand.NewPCG(1, 2))
	// seen counts the kinds of step, so that the test fails when the
	// sequences stop covering one.
	seen := map[string]int{}
	for ri, r := range rates {
		T := storekit.Interval(r)
		full := &store.Decision{Allowed: true, Remaining: r.Burst}
		steps := []quotaStep{
			{0, 0, full},        // peek at a new key
			{0, -r.Burst, full}, // refund on a new key
			{0, r.Burst, nil},   // the whole burst at once
			{0, 1, nil},         // refused
			{0, 0, nil},         // peek at an empty quota
			{T / 2, 1, nil},     // still refused
			{T / 2, 1, nil},     // refilled one
			// Refund after a burst: one back.
			{0, -1, &store.Decision{Allowed: true, Remaining: 1, ResetAfter: T * time.Duration(r.Burst-1)}},
			{0, -r.Burst, full},    // refund of more than was charged
			{0, -1, full},          // refund on the key just deleted
			{0, r.Burst + 1, nil},  // error
			{0, -r.Burst - 1, nil}, // error
			{0, r.Burst, nil},
			{3 * T, min(2, r.Burst), nil},
			{T - time.Microsecond, r.Burst, nil},       // refused with room left
			{10 * T * time.Duration(r.Burst), 0, full}, // idle past the reset
			{0, -1, full},                              // refund on an idle key
			{0, 1, nil},
		}
		for range 300 {
			var adv time.Duration
			switch rng.IntN(4) {
			case 0:
			case 1:
				adv = time.Duration(rng.Int64N(int64(T/time.Microsecond)+1)) * time.Microsecond
			case 2:
				adv = time.Duration(rng.Int64N(int64(2*T*time.Duration(r.Burst)/time.Microsecond)+1)) * time.Microsecond
			case 3:
				adv = time.Duration(rng.IntN(5)) * time.Millisecond
			}
			steps = append(steps, quotaStep{adv, rng.IntN(2*r.Burst+2) - r.Burst, nil})
		}
		k := key(t)
		for i, st := range steps {
			clk.Advance(st.advance)
			md, merr := ms.AllowN(ctx, k, r, st.cost)
			rd, rerr := rs.AllowN(ctx, k, r, st.cost)
			if (merr == nil) != (rerr == nil) || md != rd {
				t.Fatalf("rate %d %+v, step %d (+%v, cost %d): memstore %+v, %v; redisstore %+v, %v",
					ri, r, i, st.advance, st.cost, md, merr, rd, rerr)
			}
			if st.want != nil && (merr != nil || md != *st.want) {
				t.Fatalf("rate %d %+v, step %d (+%v, cost %d): %+v, %v; want %+v",
					ri, r, i, st.advance, st.cost, md, merr, *st.want)
			}
			switch {
			case merr != nil:
				seen["error"]++
			case st.cost == 0:
				seen["peek"]++
			case st.cost < 0:
				seen["refund"]++
			case md.Allowed && md.Remaining == r.Burst-st.cost && md.ResetAfter == time.Duration(st.cost)*T:
				seen["allowed on a full quota"]++
			case md.Allowed:
				seen["allowed"]++
			case md.Remaining > 0:
				seen["refused with room left"]++
			default:
				seen["refused"]++
			}
			if merr != nil {
				if !errors.Is(merr, store.ErrInvalid) || !errors.Is(rerr, store.ErrInvalid) {
					t.Fatalf("step %d: errors %v and %v, want ErrInvalid", i, merr, rerr)
				}
				continue
			}
			if st.cost < 0 {
				// A refund is allowed, and full exactly when nothing is
				// left to reset.
				if !md.Allowed || md.RetryAfter != 0 || (md.Remaining == r.Burst) != (md.ResetAfter == 0) {
					t.Fatalf("step %d: refund %d decided %+v", i, -st.cost, md)
				}
				if md.ResetAfter == 0 {
					if n, err := c.Exists(ctx, k).Result(); err != nil || n != 0 {
						t.Fatalf("step %d: refund filled the quota, EXISTS %d, %v", i, n, err)
					}
				}
			}
			if md.Allowed && (st.cost > 0 || st.cost < 0 && md.ResetAfter > 0) && T%time.Millisecond == 0 {
				// gcra_ms.lua, under the test clock, wrote the TAT as the
				// key's expiry time: now, in whole ms, plus ResetAfter.
				want := clk.Now().UnixMilli() + md.ResetAfter.Milliseconds()
				if at, err := c.Do(ctx, "PEXPIRETIME", k).Int64(); err != nil || at != want {
					t.Fatalf("step %d: PEXPIRETIME %d, %v; want %d (ResetAfter %v)", i, at, err, want, md.ResetAfter)
				}
			} else if md.Allowed && (st.cost > 0 || st.cost < 0 && md.ResetAfter > 0) {
				// gcra.lua, under the test clock, wrote the TAT's
				// millisecond, rounded up, as the key's expiry time.
				tat := clk.Now().UnixMicro() + md.ResetAfter.Microseconds()
				want := (tat + 999) / 1000
				if at, err := c.Do(ctx, "PEXPIRETIME", k).Int64(); err != nil || at != want {
					t.Fatalf("step %d: PEXPIRETIME %d, %v; want %d (ResetAfter %v)", i, at, err, want, md.ResetAfter)
				}
			}
		}
	}
	// A refund is allowed even on a quota overspent under a smaller Rate:
	// charged under rates[0] (TAT 1s ahead), refunded under a tolerance of
	// 100ms, where a peek is refused.
	small := store.Rate{Limit: 10, Window: time.Second, Burst: 1}
	k := key(t)
	for i, st := range []struct {
		r       store.Rate
		advance time.Duration
		cost    int
		want    store.Decision
	}{
		{rates[0], 0, 4, store.Decision{Allowed: true, ResetAfter: time.Second}},
		{small, 0, -1, store.Decision{Allowed: true, ResetAfter: 900 * time.Millisecond}},
		{small, 0, 0, store.Decision{RetryAfter: 800 * time.Millisecond, ResetAfter: 900 * time.Millisecond}},
		{small, 0, -1, store.Decision{Allowed: true, ResetAfter: 800 * time.Millisecond}},
		{small, 750 * time.Millisecond, -1, store.Decision{Allowed: true, Remaining: 1}},
	} {
		clk.Advance(st.advance)
		md, merr := ms.AllowN(ctx, k, st.r, st.cost)
		rd, rerr := rs.AllowN(ctx, k, st.r, st.cost)
		if merr != nil || rerr != nil || md != st.want || rd != st.want {
			t.Fatalf("overspent, step %d (%+v, +%v, cost %d): memstore %+v, %v; redisstore %+v, %v; want %+v",
				i, st.r, st.advance, st.cost, md, merr, rd, rerr, st.want)
		}
	}
	if n, err := c.Exists(ctx, k).Result(); err != nil || n != 0 {
		t.Fatalf("overspent quota refunded to full: EXISTS %d, %v", n, err)
	}

	for _, kind := range []string{"error", "peek", "refund", "allowed on a full quota", "allowed", "refused with room left", "refused"} {
		if seen[kind] < 5 {
			t.Errorf("only %d steps of kind %q", seen[kind], kind)
		}
	}
	t.Logf("steps: %v", seen)
}

// TestQuotaTwoClients shares one quota between two stores on two clients,
// as two instances of a service would: together they are allowed exactly
// Burst requests, each allowed request seeing a different Remaining.
func TestQuotaTwoClients(t *testing.T) {
	a, srv, _ := newStore(t)
	b := newClientStore(t, srv.Client(t))
	ctx := context.Background()
	k := key(t)
	r := store.Rate{Limit: 10, Window: time.Hour, Burst: 10}

	// Alternating: the decisions continue each other's.
	for i := range r.Burst {
		s := a
		if i%2 == 1 {
			s = b
		}
		d, err := s.AllowN(ctx, k, r, 1)
		if err != nil || !d.Allowed || d.Remaining != r.Burst-1-i {
			t.Fatalf("request %d: %+v, %v", i, d, err)
		}
	}
	for _, s := range []*redisStore{a, b} {
		d, err := s.AllowN(ctx, k, r, 1)
		if err != nil || d.Allowed || d.Remaining != 0 || d.RetryAfter <= 0 || d.RetryAfter > storekit.Interval(r) {
			t.Fatalf("over the quota: %+v, %v", d, err)
		}
	}

	// Concurrent: exactly Burst allowed over both.
	k = key(t)
	var mu sync.Mutex
	seen := map[int]bool{}
	var wg sync.WaitGroup
	for i := range 40 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			d, err := s.AllowN(ctx, k, r, 1)
			if err != nil {
				t.Error(err)
				return
			}
			if d.Allowed {
				mu.Lock()
				defer mu.Unlock()
				assert.False(t, seen[d.Remaining], "Remaining %d twice", d.Remaining)
				seen[d.Remaining] = true
			}
		})
	}
	wg.Wait()
	require.EqualValues(t, r.Burst, len(seen), "%d allowed over two clients, want %d", len(seen), r.Burst)
}

// TestQuotaKeyExpires checks, on the server's clock, that the key's TTL is
// the reset time and that the key is gone, the quota full, once it passed;
// and that peeks and refusals write nothing.
func TestQuotaKeyExpires(t *testing.T) {
	s, srv, c := newStore(t)
	other := newClientStore(t, srv.Client(t))
	ctx := context.Background()
	k := key(t)
	r := store.Rate{Limit: 4, Window: 400 * time.Millisecond, Burst: 4}

	if d, err := s.AllowN(ctx, k, r, 0); err != nil || d != (store.Decision{Allowed: true, Remaining: 4}) {
		t.Fatalf("peek at a new key: %+v, %v", d, err)
	}
	if n := c.Exists(ctx, k).Val(); n != 0 {
		t.Fatal("a peek wrote the key")
	}
	start := time.Now()
	d, err := s.AllowN(ctx, k, r, 3)
	if err != nil || !d.Allowed || d.Remaining != 1 || d.ResetAfter <= 0 || d.ResetAfter > 300*time.Millisecond {
		t.Fatalf("charge: %+v, %v", d, err)
	}
	pttl := c.PTTL(ctx, k).Val()
	if pttl > d.ResetAfter+time.Millisecond || pttl < d.ResetAfter-50*time.Millisecond {
		t.Fatalf("PTTL %v, ResetAfter %v", pttl, d.ResetAfter)
	}
	tat := c.Get(ctx, k).Val()
	if d, err := other.AllowN(ctx, k, r, 2); err != nil || d.Allowed {
		t.Fatalf("the other client over the quota: %+v, %v", d, err)
	}
	if got := c.Get(ctx, k).Val(); got != tat {
		t.Fatalf("a refusal moved the TAT from %s to %s", tat, got)
	}
	for c.Exists(ctx, k).Val() == 1 {
		if time.Since(start) > d.ResetAfter+time.Second {
			t.Fatalf("key still there %v after a reset of %v", time.Since(start), d.ResetAfter)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if el := time.Since(start); el < d.ResetAfter-5*time.Millisecond {
		t.Fatalf("key gone after %v, before its reset %v", el, d.ResetAfter)
	}
	if d, err := other.AllowN(ctx, k, r, 0); err != nil || d != (store.Decision{Allowed: true, Remaining: 4}) {
		t.Fatalf("peek after the reset: %+v, %v", d, err)
	}
	if _, err := s.AllowN(ctx, k, r, 5); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("cost above burst: %v", err)
	}
	if _, err := s.AllowN(ctx, "", r, 1); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("empty key: %v", err)
	}
	lock := key(t)
	mustAcquire(t, s, store.Request{Key: lock, Token: "token", TTL: time.Minute})
	if d, err := s.AllowN(ctx, lock, r, 1); err == nil {
		t.Fatalf("quota on a lock's key: %+v, want an error", d)
	}
	if got := c.Get(ctx, lock).Val(); got != "token" {
		t.Fatalf("quota on a lock's key overwrote it with %q", got)
	}
}

type redisStore = redisstore.Store

// newClientStore returns a store on c, closed at the test's end: a second
// instance next to newStore's.
func newClientStore(t *testing.T, c redis.UniversalClient) *redisstore.Store {
	t.Helper()
	s := redisstore.New(c)
	t.Cleanup(func() { _ = s.Close() })
	<-redisstore.ConfigChecked(s)
	return s
}

// TestQuotaScriptsShareKeys: a key charged by one GCRA script is read by
// the other to the millisecond (two policies' rates on one key, or a key
// from before an upgrade), on the server's real clock; and gcra_ms.lua, the
// script of whole-millisecond intervals, refuses what is not a quota
// without changing it, as gcra.lua does.
func TestQuotaScriptsShareKeys(t *testing.T) {
	s, _, c := newStore(t)
	ctx := context.Background()
	// Long intervals, so that a slow machine between two calls changes
	// nothing the checks look at.
	micro := store.Rate{Limit: 3, Window: 10 * time.Second, Burst: 3} // T 3333333µs: gcra.lua
	milli := store.Rate{Limit: 4, Window: 10 * time.Second, Burst: 4} // T 2.5s: gcra_ms.lua

	// gcra.lua writes a TAT 10s ahead; gcra_ms.lua sees it, rounded up.
	k := key(t)
	if d, err := s.AllowN(ctx, k, micro, 3); err != nil || !d.Allowed {
		t.Fatalf("charge: %+v, %v", d, err)
	}
	d, err := s.AllowN(ctx, k, milli, 0)
	if err != nil || d.ResetAfter > 10*time.Second+time.Millisecond || d.ResetAfter < 8*time.Second || d.Remaining != 0 {
		t.Fatalf("gcra_ms.lua on gcra.lua's key: %+v, %v; want about 10s to reset, nothing left", d, err)
	}
	if d, err := s.AllowN(ctx, k, milli, 1); err != nil || d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > 2501*time.Millisecond {
		t.Fatalf("gcra_ms.lua over gcra.lua's quota: %+v, %v; want refused for at most 2.5s", d, err)
	}

	// gcra_ms.lua writes an expiry 5s ahead and an empty value; gcra.lua
	// reads the expiry, then writes its own TAT.
	k = key(t)
	if d, err := s.AllowN(ctx, k, milli, 2); err != nil || d != (store.Decision{Allowed: true, Remaining: 2, ResetAfter: 5 * time.Second}) {
		t.Fatalf("charge: %+v, %v", d, err)
	}
	if v := c.Get(ctx, k).Val(); v != "" {
		t.Fatalf("gcra_ms.lua stored %q, want an empty value", v)
	}
	d, err = s.AllowN(ctx, k, micro, 1)
	if err != nil || !d.Allowed || d.ResetAfter > 8334*time.Millisecond || d.ResetAfter < 6*time.Second {
		t.Fatalf("gcra.lua on gcra_ms.lua's key: %+v, %v; want allowed, about 8.33s to reset", d, err)
	}
	if _, err := c.Get(ctx, k).Int64(); err != nil {
		t.Fatalf("gcra.lua left no TAT: %v", err)
	}
	if d, err := s.AllowN(ctx, k, milli, 0); err != nil || d.ResetAfter > 8334*time.Millisecond || d.ResetAfter < 6*time.Second {
		t.Fatalf("gcra_ms.lua on the rewritten key: %+v, %v", d, err)
	}

	// Not quotas: a lock's token, a key without expiry, a hash.
	for name, set := range map[string]func(k string) error{
		"token":     func(k string) error { return c.Set(ctx, k, "token", time.Minute).Err() },
		"no expiry": func(k string) error { return c.Set(ctx, k, "", 0).Err() },
		"hash":      func(k string) error { return c.HSet(ctx, k, "f", "v").Err() },
	} {
		k := key(t) + name
		require.NoError(t, set(k))
		before, _ := c.Dump(ctx, k).Result()
		for _, r := range []store.Rate{milli, micro} {
			if d, err := s.AllowN(ctx, k, r, 1); err == nil {
				t.Errorf("%s, rate %v: %+v, want an error", name, storekit.Interval(r), d)
			}
		}
		if after, _ := c.Dump(ctx, k).Result(); after != before {
			t.Errorf("%s: a refused quota call changed the key", name)
		}
		if ttl := c.PTTL(ctx, k).Val(); name != "token" && ttl != -1 {
			t.Errorf("%s: a refused quota call set an expiry: %v", name, ttl)
		}
	}
}

// TestQuotaLeavesForeignKey: a charge on a key that is no quota (a lock's
// token) whose expiry is short enough for the charge to fit, the case in
// which gcra_ms.lua would write, fails and leaves the key as it was: its
// value, and its expiry (to the millisecond on the server's clock, exactly
// under a test clock). On the same test clock a quota key is charged and
// expires at its TAT. (A SET XX GET that writes and checks in one call was
// tried: INFO commandstats measured the script 0.3–0.9 µs slower than
// PTTL, GET and PEXPIRE.)
func TestQuotaLeavesForeignKey(t *testing.T) {
	s, _, c := newStore(t)
	ctx := context.Background()
	r := store.Rate{Limit: 4, Window: 10 * time.Second, Burst: 4} // T 2.5s, tau 10s: a 5 s expiry leaves room
	token := storekit.NewToken()

	k := key(t)
	require.NoError(t, c.Set(ctx, k, token, 5*time.Second).Err())
	before := c.PExpireTime(ctx, k).Val()
	if d, err := s.AllowN(ctx, k, r, 1); err == nil {
		t.Fatalf("a charge on a lock's key: %+v, want an error", d)
	}
	if got := c.Get(ctx, k).Val(); got != token {
		t.Fatalf("the lock's value is %q, want %q", got, token)
	}
	// Within a millisecond: a script that wrote and put the expiry back
	// from PTTL would land there too.
	if after := c.PExpireTime(ctx, k).Val(); after < before-time.Millisecond || after > before+time.Millisecond {
		t.Fatalf("the lock's expiry moved from %v to %v", before, after)
	}

	// Under a test clock the expiry is read as a time.
	clk := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s = redisstore.New(c, redisstore.WithQuotaClock(func() time.Time { return clk }))
	t.Cleanup(func() { _ = s.Close() })
	k = key(t)
	at := clk.Add(5 * time.Second).UnixMilli()
	require.NoError(t, c.Do(ctx, "SET", k, token, "PXAT", at).Err())
	if d, err := s.AllowN(ctx, k, r, 1); err == nil {
		t.Fatalf("a charge on a lock's key, test clock: %+v, want an error", d)
	}
	if got := c.Get(ctx, k).Val(); got != token {
		t.Fatalf("test clock: the lock's value is %q, want %q", got, token)
	}
	if got := c.PExpireTime(ctx, k).Val(); got != time.Duration(at)*time.Millisecond {
		t.Fatalf("test clock: the lock's expiry is %v, want %v", got, time.Duration(at)*time.Millisecond)
	}
	// And a quota key is charged on the same path.
	q := key(t)
	if d, err := s.AllowN(ctx, q, r, 1); err != nil || !d.Allowed {
		t.Fatalf("first charge: %+v, %v", d, err)
	}
	if d, err := s.AllowN(ctx, q, r, 1); err != nil || !d.Allowed || d.ResetAfter != 5*time.Second {
		t.Fatalf("second charge: %+v, %v; want allowed, 5s to reset", d, err)
	}
	if got := c.PExpireTime(ctx, q).Val(); got != time.Duration(clk.Add(5*time.Second).UnixMilli())*time.Millisecond {
		t.Fatalf("quota expiry %v, want the TAT", got)
	}
}

// TestQuotaNewKeyStep checks a charge that starts with SET NX (the step
// for new keys, see redisalgo.Store.AllowN) against the script alone and the store's
// own choice (see redistest.CheckQuotaNewKey).
func TestQuotaNewKeyStep(t *testing.T) {
	for _, path := range []string{"set", "script", "store"} {
		t.Run(path, func(t *testing.T) {
			s, _, c := newStore(t, redisstore.WithPath(path))
			redistest.CheckQuotaNewKey(t, s, c, path == "script", func() string { return key(t) })
		})
	}
}
