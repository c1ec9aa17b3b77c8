package memstore

import (
	"bytes"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

// floodPolicy acquires up to n distinct keys of policy for an hour, as a
// flood of new users on one route would, and returns how many were refused
// with errFull; any other error fails the test.
func floodPolicy(t *testing.T, s *Store, policy string, n int) (refused int) {
	t.Helper()
	for i := range n {
		key := storekit.Key("throttle", policy, "user-"+strconv.Itoa(i))
		g, err := s.Acquire(bg, store.Request{Key: key, Token: "flood", TTL: time.Hour})
		if errors.Is(err, errFull) {
			refused++
			continue
		}
		require.NoError(t, err, "flood key %d", i)
		require.True(t, g.Acquired, "flood key %d", i)
	}
	return refused
}

// seePolicies acquires and releases keys of each policy until every shard
// of s has seen it, as a service's routes do in normal use.
func seePolicies(t *testing.T, s *Store, policies ...string) {
	t.Helper()
	for _, policy := range policies {
		for i := range 64 * len(s.shards) {
			key := storekit.Key("throttle", policy, "seen-"+strconv.Itoa(i))
			acquire(t, s, key, "t", time.Minute)
			outcome(t, store.OK)(s.Release(bg, key, "t"))
		}
	}
}

// TestFloodOfOnePolicy (issue 27, part 2; issue 36): one policy's keys fill
// the store up to its fair share, as the other policies of the service
// have used every shard; a new key of another policy is still granted, and
// its second acquisition is still refused as held: the other policy's
// answers do not change.
func TestFloodOfOnePolicy(t *testing.T) {
	s := New(WithMaxKeys(1000))
	others := []string{"other", "orders", "jobs", "password-reset"}
	seePolicies(t, s, others...)
	refused := floodPolicy(t, s, "flood", 5000)
	require.Positive(t, refused, "the flood never reached its policy's limit: the test proves nothing")

	key := storekit.Key("throttle", "other", "user-1")
	g, err := s.Acquire(bg, store.Request{Key: key, Token: "first", TTL: time.Minute})
	require.NoError(t, err, "a new key of another policy after the flood")
	require.True(t, g.Acquired)
	g, err = s.Acquire(bg, store.Request{Key: key, Token: "second", TTL: time.Minute})
	require.NoError(t, err)
	assert.False(t, g.Acquired, "a duplicate of the other policy's key must stay refused")
	assert.Equal(t, time.Minute, g.Remaining)

	// Every other policy still gets its whole fair share in every shard,
	// however many shards GOMAXPROCS gives the store: keys are taken only
	// in shards where the policy is below its share.
	for _, policy := range others[1:] {
		inShard := map[*shard]int64{}
		fair := s.shards[0].locks.fair
		for i := 0; len(inShard) < len(s.shards) || !allAt(inShard, fair); i++ {
			k := storekit.Key("throttle", policy, "user-"+strconv.Itoa(i))
			if inShard[s.shard(k)] == fair {
				continue
			}
			inShard[s.shard(k)]++
			g, err := s.Acquire(bg, store.Request{Key: k, Token: "t", TTL: time.Minute, Fence: i%2 == 0})
			require.NoError(t, err, "%s key %d after the flood (fair share %d per shard)", policy, i, fair)
			require.True(t, g.Acquired, "%s key %d", policy, i)
		}
	}
	// The flooded policy's held keys stay held.
	g, err = s.Acquire(bg, store.Request{Key: storekit.Key("throttle", "flood", "user-0"), Token: "dup", TTL: time.Minute})
	require.NoError(t, err)
	assert.False(t, g.Acquired, "a held key of the flooded policy was given to a duplicate")
	s.checkPolicyCounts(t)
}

// allAt reports whether every count is n.
func allAt(counts map[*shard]int64, n int64) bool {
	for _, c := range counts {
		if c != n {
			return false
		}
	}
	return true
}

// TestOnePolicyFillsTheStore (issue 36): a policy alone in a store may use
// its whole bound; a policy first seen once the store is full of live locks
// is refused (nothing held is evicted) until room is made.
func TestOnePolicyFillsTheStore(t *testing.T) {
	s := New(WithMaxKeys(16)) // one shard
	require.Zero(t, floodPolicy(t, s, "flood", 16), "a policy alone was refused before the bound")
	require.Equal(t, 16, floodPolicy(t, s, "flood", 32), "past the bound")
	key := storekit.Key("throttle", "late", "1")
	_, err := s.Acquire(bg, store.Request{Key: key, Token: "t", TTL: time.Minute})
	require.ErrorIs(t, err, store.ErrFull, "a newcomer to a store full of live locks")
	outcome(t, store.OK)(s.Release(bg, storekit.Key("throttle", "flood", "user-0"), "flood"))
	acquire(t, s, key, "t", time.Minute)
	// Now seen, "late" is owed half of the store: the flood is held at its half.
	for i := range 8 {
		outcome(t, store.OK)(s.Release(bg, storekit.Key("throttle", "flood", "user-"+strconv.Itoa(1+i)), "flood"))
	}
	require.Equal(t, 8, floodPolicy(t, s, "flood", 16), "the flood past its fair share with another policy owed room")
	for i := range 7 {
		acquire(t, s, storekit.Key("throttle", "late", "x"+strconv.Itoa(i)), "t", time.Minute)
	}
	s.checkPolicyCounts(t)
}

// TestFloodOfOnePolicyThroughLimiters is the report: one store
// serves several policies, each seen in every shard; after a flood of
// distinct users on the Dedupe policy "submit" (refused past its fair
// share, never let through), new users of "orders" (Dedupe), "jobs" (Exclusive) and
// "password-reset" (Cooldown) are admitted and their duplicates turned
// away, and "submit" still turns away the duplicates of the keys it holds.
func TestFloodOfOnePolicyThroughLimiters(t *testing.T) {
	s := New(WithMaxKeys(1000))
	seePolicies(t, s, "orders", "jobs", "password-reset")
	limiter := func(p throttle.LockConfig) *throttle.Lock {
		l, err := throttle.NewLock(s, p)
		require.NoError(t, err)
		return l
	}
	// The flood's refusals are logged: not into the test's output.
	submit := limiter(throttle.LockConfig{Name: "submit", TTL: time.Minute, Options: throttle.Options{Logger: slog.New(slog.DiscardHandler)}})
	for i := range 5000 {
		lease, err := submit.Admit(bg, "flood-"+strconv.Itoa(i))
		if err != nil {
			require.ErrorIs(t, err, store.ErrFull, "the flood past its share")
			continue
		}
		require.NotNil(t, lease, "flood-%d let through unguarded", i) // held for the Window
	}
	require.Positive(t, submit.Stats().Full, "the flood never filled its share: the test proves nothing")
	require.Zero(t, submit.Stats().FailedOpen)

	for _, l := range []*throttle.Lock{
		limiter(throttle.LockConfig{Name: "orders", TTL: time.Minute}),
		limiter(throttle.LockConfig{Name: "jobs", Mode: throttle.Exclusive, Fence: true}),
		limiter(throttle.LockConfig{Name: "password-reset", Mode: throttle.Cooldown, TTL: time.Minute}),
	} {
		for i := range 20 {
			id := "user-" + strconv.Itoa(i)
			lease, err := l.Admit(bg, id)
			require.NoError(t, err, "new user %d after the flood", i)
			require.NotNil(t, lease, "new user %d after the flood was let through unguarded", i)
			dup, err := l.Admit(bg, id)
			require.ErrorIs(t, err, throttle.ErrContended, "duplicate of user %d", i)
			require.Nil(t, dup)
		}
		st := l.Stats()
		assert.Zero(t, st.StoreErrors, "store errors on another policy: %+v", st)
		assert.Zero(t, st.FailedOpen, "failed open on another policy: %+v", st)
	}
	dup, err := submit.Admit(bg, "flood-0")
	require.ErrorIs(t, err, throttle.ErrContended, "a duplicate on the flooded policy")
	require.Nil(t, dup)
}

// TestFenceCountersNeverFillTheStore (issue 27, part 2): fenced locks taken
// and released one after the other leave their counters behind for the
// fence TTL; the counters of 200 keys in a store of 64 no longer make it
// refuse new fenced locks (before, the 44th key failed with errFull), and
// each key's fences still only increase across re-acquisitions.
func TestFenceCountersNeverFillTheStore(t *testing.T) {
	s := New(WithMaxKeys(64))
	l, err := throttle.NewLock(s, throttle.LockConfig{Name: "jobs", Mode: throttle.Exclusive, Fence: true})
	require.NoError(t, err)
	last := map[string]int64{}
	for round := range 3 {
		for i := range 200 {
			id := "job-" + strconv.Itoa(i)
			lease, err := l.Acquire(bg, id)
			require.NoError(t, err, "round %d, key %d", round, i)
			require.Greater(t, lease.Fence(), last[id], "round %d, key %d: fences must increase", round, i)
			last[id] = lease.Fence()
			require.NoError(t, lease.Release(bg))
		}
	}
	_, fences, _ := s.counts()
	assert.LessOrEqual(t, fences, 64+len(s.shards), "fence counters past the bound")
}

// TestFencesIncreaseAcrossRemovedCounters: at the store, with the clock
// stepping back between rounds, a key whose counter was removed to make
// room (held or not) still gets fences above all it had: new counters start
// above the highest fence of every counter removed from the shard.
func TestFencesIncreaseAcrossRemovedCounters(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now), WithMaxKeys(16)) // one shard, 16 counters
	last := map[string]int64{}
	held := storekit.Key("throttle", "jobs", "held")
	g, err := s.Acquire(bg, store.Request{Key: held, Token: "h", TTL: time.Hour, Fence: true})
	require.NoError(t, err)
	last[held] = g.Fence
	for round := range 10 {
		for i := range 50 {
			key := storekit.Key("throttle", "jobs", strconv.Itoa(i))
			g, err := s.Acquire(bg, store.Request{Key: key, Token: "t", TTL: time.Second, Fence: true})
			require.NoError(t, err, "round %d, key %d", round, i)
			require.True(t, g.Acquired)
			require.Greater(t, g.Fence, last[key], "round %d, key %d", round, i)
			last[key] = g.Fence
			outcome(t, store.OK)(s.Release(bg, key, "t"))
		}
		clk.Advance(-time.Minute) // the wall clock steps back
		// The held key's retry asks a new fence; its counter may have
		// been removed to make room meanwhile.
		g, err := s.Acquire(bg, store.Request{Key: held, Token: "h", TTL: time.Hour, Fence: true})
		require.NoError(t, err)
		require.True(t, g.Acquired)
		require.Greater(t, g.Fence, last[held], "round %d: the held key's fence", round)
		last[held] = g.Fence
	}
	_, fences, _ := s.counts()
	assert.LessOrEqual(t, fences, 16)
}

// TestQuotaFloodOfOnePolicy (issue 36): a flood of new quota keys on one
// policy is never refused: past the bound each evicts the policy's least
// recently used quota. Another policy's new quota takes room from the flood
// up to its fair share, and still counts.
func TestQuotaFloodOfOnePolicy(t *testing.T) {
	s := New(WithMaxKeys(16)) // one shard
	r := store.Rate{Limit: 1, Window: time.Hour, Burst: 1}
	for i := range 100 {
		d, err := s.AllowN(bg, storekit.Key("throttle", "flood", strconv.Itoa(i)), r, 1)
		require.NoError(t, err)
		require.True(t, d.Allowed)
	}
	for i := range 12 {
		key := storekit.Key("throttle", "other", "user-"+strconv.Itoa(i))
		d, err := s.AllowN(bg, key, r, 1)
		require.NoError(t, err, "a new quota of another policy after the flood")
		require.True(t, d.Allowed)
		d, err = s.AllowN(bg, key, r, 1)
		require.NoError(t, err)
		assert.False(t, d.Allowed, "the other policy's quota must still count")
	}
	sh := &s.shards[0]
	flood, other := sh.pols.id(storekit.Key("throttle", "flood", "")), sh.pols.id(storekit.Key("throttle", "other", ""))
	require.Equal(t, int64(8), sh.quotas.policyUsed(flood), "the flood keeps its fair share")
	require.Equal(t, int64(8), sh.quotas.policyUsed(other), "past its share, a policy evicts its own")
	s.checkPolicyCounts(t)
}

// TestRecordPolicyShare: one policy's records may use the whole record
// bound while alone, and leave another policy seen its fair share.
func TestRecordPolicyShare(t *testing.T) {
	s := New(WithMaxKeys(16), WithMaxRecordBytes(1000)) // one shard
	require.Len(t, s.shards, 1)
	b := func(n int) []byte { return bytes.Repeat([]byte{'x'}, n) }
	a0, a1 := storekit.Key("throttle", "a", "0"), storekit.Key("throttle", "a", "1")
	b0 := storekit.Key("throttle", "b", "0")
	for _, k := range []string{a0, a1, b0} {
		acquire(t, s, k, "t", time.Minute)
	}
	_, err := s.Record(bg, a0, "t", b(1001), time.Minute)
	require.ErrorIs(t, err, store.ErrInvalid, "a record larger than the bound")
	outcome(t, store.OK)(s.Record(bg, a0, "t", b(900), time.Minute))
	outcome(t, store.OK)(s.Release(bg, a0, "t"))
	outcome(t, store.OK)(s.Record(bg, b0, "t", b(100), time.Minute)) // b is seen: owed 500
	outcome(t, store.OK)(s.Record(bg, a1, "t", b(500), time.Minute))
	acquire(t, s, a0, "t", time.Minute)
	_, err = s.Record(bg, a0, "t", b(smallRecord+1), time.Minute)
	require.ErrorIs(t, err, errFull, "policy a past its share")
	outcome(t, store.OK)(s.Record(bg, b0, "t", b(400), time.Minute))
	s.checkPolicyCounts(t)
}

// TestPolicyCountsModel drives a small store with random acquisitions,
// releases, extensions, quotas, records and clock steps over keys of a few
// policies (and keys of no policy), and checks after every step that the
// per-policy counts are what the shards hold, that no policy holds more
// than its share, and that a new lock is refused with errFull only when its
// shard or its policy's share is full of live locks.
func TestPolicyCountsModel(t *testing.T) {
	policies := []string{"a", "b", "c"}
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 27))
		clk := newFakeClock()
		s := New(WithClock(clk.Now), WithMaxKeys(32), WithMaxRecordBytes(400))
		r := store.Rate{Limit: 2, Window: 40 * time.Millisecond, Burst: 2}
		for step := range 5000 {
			var key string
			if p := rng.IntN(len(policies) + 1); p < len(policies) {
				key = storekit.Key("throttle", policies[p], strconv.Itoa(rng.IntN(40)))
			} else {
				key = "bare" + strconv.Itoa(rng.IntN(10))
			}
			tok := "t" + strconv.Itoa(rng.IntN(2))
			ttl := time.Duration(1+rng.IntN(50)) * time.Millisecond
			switch op := rng.IntN(10); {
			case op < 4:
				_, err := s.Acquire(bg, store.Request{Key: key, Token: tok, TTL: ttl, Fence: rng.IntN(2) == 0})
				if errors.Is(err, errFull) {
					s.checkFull(t, key, step)
				} else {
					require.NoError(t, err, "step %d", step)
				}
			case op < 5:
				_, err := s.Release(bg, key, tok)
				require.NoError(t, err)
			case op < 6:
				_, err := s.Extend(bg, key, tok, ttl)
				require.NoError(t, err)
			case op < 7:
				_, err := s.AllowN(bg, key, r, rng.IntN(4)-1)
				if !errors.Is(err, errFull) {
					require.NoError(t, err, "step %d", step)
				}
			case op < 8:
				_, err := s.Record(bg, key, tok, make([]byte, rng.IntN(60)), time.Minute)
				if !errors.Is(err, errFull) {
					require.NoError(t, err, "step %d", step)
				}
			default:
				clk.Advance(time.Duration(rng.IntN(10)) * time.Millisecond)
			}
			s.checkPolicyCounts(t)
		}
	}
}

// checkFull fails unless key's shard, when Acquire refused key with errFull,
// had no room for it: its live locks leave none under bounds.fits's rule.
func (s *Store) checkFull(t *testing.T, key string, step int) {
	t.Helper()
	now, _ := s.now(false)
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	live := map[uint16]int64{}
	for _, l := range sh.locks.all() {
		if l.expires > now {
			live[l.pol]++
		}
	}
	for _, sm := range sh.sems.m {
		live[sm.pol] += int64(len(sm.holders))
	}
	require.False(t, sh.locks.wantFits(live, sh.pols.id(key), 1),
		"step %d: errFull for %q with live locks %v (bound %d)", step, key, live, sh.locks.limit)
}

// wantFits is bounds.fits worked out from scratch for the entries live:
// within the limit, and leaving every other policy seen the part of its
// fair share it lacks.
func (b *bounds) wantFits(live map[uint16]int64, p uint16, n int64) bool {
	seen, used := int64(0), int64(0)
	for _, s := range b.seen {
		if s {
			seen++
		}
	}
	for _, c := range live {
		used += c
	}
	fair, owed := b.limit/max(seen, 1), int64(0)
	for q, s := range b.seen {
		if s && uint16(q) != p {
			owed += max(fair-live[uint16(q)], 0)
		}
	}
	return used+n <= b.limit && used+n+owed <= b.limit
}

// checkOwed fails unless b's fair share and the room it owes are those of
// its counts.
func (b *bounds) checkOwed(t *testing.T) {
	t.Helper()
	seen, owed := int64(0), int64(0)
	for _, s := range b.seen {
		if s {
			seen++
		}
	}
	require.Equal(t, b.limit/max(seen, 1), b.fair)
	for q, s := range b.seen {
		if s {
			owed += max(b.fair-b.byPolicy[q], 0)
		}
	}
	require.Equal(t, owed, b.owed)
}

// checkPolicyCounts fails unless every shard's counts of locks, quotas and
// record bytes, in all and per policy, are what it holds, and each is within
// its bound.
func (s *Store) checkPolicyCounts(t *testing.T) {
	t.Helper()
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		byPolicy := map[uint16]int64{}
		for k, l := range sh.locks.all() {
			require.Equal(t, sh.pols.id(k), l.pol, "lock %q", k)
			byPolicy[l.pol]++
		}
		for _, sm := range sh.sems.m {
			byPolicy[sm.pol] += int64(len(sm.holders))
		}
		for p := range max(len(sh.locks.byPolicy), len(byPolicy)) {
			require.Equal(t, byPolicy[uint16(p)], sh.locks.policyUsed(uint16(p)), "locks of policy %d", p)
		}
		sh.locks.checkOwed(t)
		require.LessOrEqual(t, sh.locks.used, sh.locks.limit)
		checkCounts(t, &sh.pols, &sh.quotas)
		checkCounts(t, &sh.pols, &sh.records)
		sh.mu.Unlock()
	}
}

// checkCounts fails unless tb's counts are those of its entries and each
// entry counts for its key's policy.
func checkCounts[V item](t *testing.T, pols *policies, tb *table[V]) {
	t.Helper()
	byPolicy := map[uint16]int64{}
	var used int64
	for k, v := range tb.m {
		require.Equal(t, pols.id(k), v.policy(), "entry %q", k)
		byPolicy[v.policy()] += v.size()
		used += v.size()
	}
	require.Equal(t, used, tb.used)
	for p := range max(len(tb.byPolicy), len(byPolicy)) {
		require.Equal(t, byPolicy[uint16(p)], tb.policyUsed(uint16(p)), "policy %d", p)
	}
	tb.checkOwed(t)
}

func TestPolicyOf(t *testing.T) {
	for key, want := range map[string]string{
		storekit.Key("throttle", "submit", "u:1{x}"): "submit",
		storekit.Key("throttle", "a%b", "1"):         "a%25b",
		"plain":                                      "",
		"{tag}":                                      "",
		"{tag}:x":                                    "",
		"p:{pol:id}":                                 "pol",
		"{:id}":                                      "",
	} {
		assert.Equal(t, want, policyOf(key), "policyOf(%q)", key)
	}
}
