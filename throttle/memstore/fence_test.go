package memstore

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

func fenced(t *testing.T, s *Store, key string) int64 {
	t.Helper()
	g, err := s.Acquire(bg, store.Request{Key: key, Token: "t", TTL: time.Second, Fence: true})
	require.NoError(t, err, "fenced Acquire(%q)", key)
	require.True(t, g.Acquired, "fenced Acquire(%q)", key)
	outcome(t, store.OK)(s.Release(bg, key, "t"))
	return g.Fence
}

func TestFenceFollowsClockAndCounter(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now))
	wall := clk.Now().UnixMicro()
	require.Equal(t, wall, fenced(t, s, "k"), "the first fence is the clock in microseconds")
	for i := int64(1); i <= 3; i++ { // the clock does not move: the counter does
		require.Equal(t, wall+i, fenced(t, s, "k"), "fence %d", i)
	}
	clk.Advance(time.Second) // past the counter: the fence follows the clock
	require.Equal(t, wall+1e6, fenced(t, s, "k"), "fence after 1s")
	require.Equal(t, wall+1e6, fenced(t, s, "other"), "another key has its own counter")
}

func TestFenceSurvivesBackwardClockWhileKept(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now), withFenceTTL(time.Hour))
	f1 := fenced(t, s, "k")
	clk.Advance(-time.Minute) // a wall clock step back
	require.Equal(t, f1+1, fenced(t, s, "k"))
}

func TestFenceCountersAreDropped(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now), withFenceTTL(time.Hour), WithMaxKeys(16))
	for _, k := range []string{"a", "b", "c"} {
		fenced(t, s, k)
	}
	_, fences, _ := s.counts()
	require.Equal(t, 3, fences)
	clk.Advance(time.Hour)
	for i := range sampleEvery { // the last samples the others, which have expired
		fenced(t, s, "new-"+strconv.Itoa(i))
	}
	_, fences, _ = s.counts()
	require.Equal(t, sampleEvery, fences, "an hour later only the new counters are left")
}

// TestFenceCountersAreBounded: a full shard makes room for a counter by
// removing another (none having expired) instead of refusing the
// acquisition, and the removed counter's key still gets increasing fences,
// even with the clock stepped back.
func TestFenceCountersAreBounded(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now), withFenceTTL(time.Hour), WithMaxKeys(2))
	last := map[string]int64{}
	for _, k := range []string{"a", "b", "c"} { // c's counter takes another's place
		last[k] = fenced(t, s, k)
	}
	locks, fences, _ := s.counts()
	require.Equal(t, 2, fences, "fence counters, bound 2")
	require.Zero(t, locks)
	clk.Advance(-time.Minute) // a wall clock step back
	for range 3 {
		for _, k := range []string{"a", "b", "c"} {
			f := fenced(t, s, k)
			require.Greater(t, f, last[k], "fence of %s after counters were removed", k)
			last[k] = f
		}
	}
}

func TestFenceAskedOnlyAtReentry(t *testing.T) {
	s := New()
	req := store.Request{Key: "k", Token: "o", TTL: time.Second, Reentrant: true}
	g1, err := s.Acquire(bg, req)
	require.NoError(t, err)
	req.Fence = true
	g2, err := s.Acquire(bg, req)
	require.NoError(t, err)
	g3, err := s.Acquire(bg, req)
	require.NoError(t, err)
	assert.Zero(t, g1.Fence)
	assert.Positive(t, g2.Fence)
	assert.Equal(t, g2.Fence, g3.Fence)
	assert.Equal(t, 3, g3.Holds)
}

// TestFenceTTLOption: WithFenceTTL has the bounds of redisstore.WithFenceTTL.
func TestFenceTTLOption(t *testing.T) {
	for opt, want := range map[time.Duration]time.Duration{
		time.Hour:             time.Hour,
		10 * time.Millisecond: time.Second,
		0:                     defaultFenceTTL,
		-time.Second:          defaultFenceTTL,
	} {
		assert.Equal(t, want, New(withFenceTTL(opt)).fenceTTL, "withFenceTTL(%v)", opt)
	}
}

// TestFencedKeysOverTimeDoNotFillTheStore: distinct fenced keys, each used
// once and never released, keep coming far longer than the bound would last
// if counters were kept forever, and the store never answers errFull.
func TestFencedKeysOverTimeDoNotFillTheStore(t *testing.T) {
	clk := newFakeClock()
	const bound = 64
	s := New(WithClock(clk.Now), withFenceTTL(time.Minute), WithMaxKeys(bound))
	const rounds, perRound = 200, 8 // 25 times the bound
	for r := range rounds {
		for i := range perRound {
			key := storekit.Key("throttle", "submit", strconv.Itoa(r*perRound+i))
			g, err := s.Acquire(bg, store.Request{Key: key, Token: storekit.NewToken(), TTL: time.Second, Fence: true})
			require.NoError(t, err, "round %d, key %d", r, i)
			require.True(t, g.Acquired)
			require.Positive(t, g.Fence)
		}
		clk.Advance(time.Minute) // the round's locks and counters expire
	}
	locks, fences, _ := s.counts()
	assert.LessOrEqual(t, locks, bound)
	assert.LessOrEqual(t, fences, bound)
}

// TestHeldKeyKeepsItsCounter: a key held far longer than the fence TTL while
// other fenced keys come and go gets increasing fences across
// re-acquisitions, even when the wall clock steps back meanwhile, where a
// counter restarted from the clock would go below them.
func TestHeldKeyKeepsItsCounter(t *testing.T) {
	clk := newFakeClock()
	const bound = 16 // one shard
	s := New(WithClock(clk.Now), withFenceTTL(time.Second), WithMaxKeys(bound))
	hot := storekit.Key("throttle", "sync", "hot")
	hold := func() (int64, string) {
		t.Helper()
		tok := storekit.NewToken()
		g, err := s.Acquire(bg, store.Request{Key: hot, Token: tok, TTL: time.Hour, Fence: true})
		require.NoError(t, err)
		require.True(t, g.Acquired)
		return g.Fence, tok
	}
	last, tok := hold()
	// Each round's check happens a minute further back than the one before,
	// while the rounds' other keys come and go ever later (the fake clock
	// drives expiry too, which a real store measures on the monotonic
	// clock).
	checkAt, loopAt := clk.Now(), clk.Now()
	for round := range 5 {
		clk.Advance(loopAt.Sub(clk.Now()))
		for i := range 3 * bound {
			clk.Advance(time.Second)
			outcome(t, store.OK)(s.Extend(bg, hot, tok, time.Hour))
			key := storekit.Key("throttle", "sync", strconv.Itoa(round*1000+i))
			g, err := s.Acquire(bg, store.Request{Key: key, Token: "t", TTL: time.Millisecond, Fence: true})
			require.NoError(t, err, "round %d, key %d", round, i)
			require.True(t, g.Acquired)
		}
		loopAt = clk.Now().Add(2 * time.Second)
		checkAt = checkAt.Add(-time.Minute)
		clk.Advance(checkAt.Sub(clk.Now())) // a wall clock step back
		outcome(t, store.OK)(s.Release(bg, hot, tok))
		var f int64
		f, tok = hold()
		require.Greater(t, f, last, "round %d", round)
		last = f
	}
}

// TestFenceAfterCounterExpiredStaysAbove: a counter runs ahead of the clock
// by one per acquisition within a microsecond; once it expired and was
// removed, the next fence of its key comes from the clock, above every
// fence handed out before.
func TestFenceAfterCounterExpiredStaysAbove(t *testing.T) {
	clk := newFakeClock()
	s := New(WithClock(clk.Now), withFenceTTL(time.Second), WithMaxKeys(16))
	var last int64
	for range 1000 { // all within one microsecond
		last = fenced(t, s, "k")
	}
	require.Equal(t, clk.Now().UnixMicro()+999, last)
	clk.Advance(time.Second)
	for i := range 16 { // fill the shard: the last needs k's room
		fenced(t, s, "other"+strconv.Itoa(i))
	}
	require.NotContains(t, s.shard("k").fences.m, "k", "k's expired counter was not removed: the test proves nothing")
	clk.Advance(time.Second)
	f := fenced(t, s, "k")
	require.Greater(t, f, last)
	require.Equal(t, clk.Now().UnixMicro(), f)
}
