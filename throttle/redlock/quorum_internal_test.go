package redlock

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

// counts returns a tally of n nodes with the given answers.
func counts(n, ours, other, gone, failed int) tally {
	t := newTally(n)
	t.ours, t.other, t.gone, t.failed = ours, other, gone, failed
	return t
}

func TestQuorum(t *testing.T) {
	for n, want := range map[int]int{3: 2, 4: 3, 5: 3, 6: 4, 7: 4} {
		assert.Equal(t, want, newTally(n).quorum, "quorum of %d", n)
	}
}

func TestVerdict(t *testing.T) {
	cases := []struct {
		n, granted, held, failed int
		want                     verdict
	}{
		// Three nodes.
		{3, 0, 0, 0, pending},
		{3, 2, 0, 0, won},     // the quorum-th grant decides
		{3, 1, 0, 0, pending}, // could still win
		{3, 0, 2, 0, refused}, // the quorum-th refusal decides
		{3, 1, 1, 0, pending}, // the last node decides
		{3, 1, 2, 0, refused}, // a split vote: a quorum answered
		{3, 1, 1, 1, refused}, // a quorum answered, none granted
		{3, 0, 1, 1, pending}, // the last node may make a quorum of answers
		{3, 0, 1, 2, failed},  // one answer of three
		{3, 1, 0, 2, failed},  // one grant, two failures
		{3, 0, 0, 2, failed},  // decided without the third node
		{3, 2, 1, 0, won},
		{3, 2, 0, 1, won},     // one node down changes nothing
		{5, 3, 0, 2, won},     // two of five down
		{5, 2, 0, 3, failed},  // three of five down
		{5, 0, 3, 0, refused}, // held: decided at the third answer
		{5, 2, 2, 0, pending}, // the fifth decides
		{5, 2, 2, 1, refused}, // split, four answered
		{5, 1, 1, 2, pending}, // one more answer makes a quorum
		{5, 1, 1, 3, failed},
		{5, 0, 0, 3, failed},  // three failures: no quorum left
		{4, 2, 1, 0, pending}, // quorum of four is three
		{4, 2, 2, 0, refused},
		{4, 3, 1, 0, won},
		{4, 1, 1, 2, failed}, // two answers of four, three needed
		{4, 0, 2, 1, pending},
		{4, 0, 2, 2, failed},  // only two answered
		{4, 1, 2, 1, refused}, // three answered
		{6, 3, 3, 0, refused}, // quorum of six is four
		{6, 0, 0, 3, failed},  // three answers at most: no quorum of answers
		{6, 0, 0, 2, pending},
		{6, 4, 0, 2, won},
	}
	for _, c := range cases {
		tl := counts(c.n, c.granted, c.held, 0, c.failed)
		assert.Equal(t, c.want, tl.verdict(), "n=%d granted=%d held=%d failed=%d", c.n, c.granted, c.held, c.failed)
	}
}

// TestVerdictInvariants checks every tally of up to seven nodes: a
// verdict is never pending once every node answered, never won without a
// quorum of grants, and never changes once given, whatever comes next.
func TestVerdictInvariants(t *testing.T) {
	for n := 3; n <= 7; n++ {
		q := newTally(n).quorum
		for g := 0; g <= n; g++ {
			for h := 0; g+h <= n; h++ {
				for f := 0; g+h+f <= n; f++ {
					tl := counts(n, g, h, 0, f)
					v := tl.verdict()
					assert.False(t, tl.outstanding() == 0 && v == pending, "%+v: pending with every node answered", tl)
					assert.Equal(t, g >= q, v == won, "%+v: verdict %d with %d grants of quorum %d", tl, v, g, q)
					assert.False(t, v == refused && g+h < q, "%+v: refused on fewer than a quorum of answers", tl)
					if v == pending || tl.outstanding() == 0 {
						continue
					}
					for _, next := range []tally{counts(n, g+1, h, 0, f), counts(n, g, h+1, 0, f), counts(n, g, h, 0, f+1)} {
						assert.Equal(t, v, next.verdict(), "%+v: the verdict changed after one more answer", tl)
					}
				}
			}
		}
	}
}

func TestRetryAfter(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var d []time.Duration
		for _, x := range v {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	cases := []struct {
		quorum, granted int
		rem             []time.Duration
		want            time.Duration
	}{
		{2, 0, ms(300, 100, 200), 200 * time.Millisecond}, // the second node to come free
		{2, 0, ms(100, 200), 200 * time.Millisecond},
		{2, 1, ms(300, 100), 100 * time.Millisecond}, // one of ours is freed now
		{3, 0, ms(500, 100, 400, 200, 300), 300 * time.Millisecond},
		{3, 2, ms(500, 100), 100 * time.Millisecond},
		{2, 0, []time.Duration{-1, 100 * time.Millisecond, -1}, -1}, // no second node ever frees
		{2, 0, []time.Duration{-1, 100 * time.Millisecond, 50 * time.Millisecond}, 100 * time.Millisecond},
		{2, 1, []time.Duration{-1, 70 * time.Millisecond}, 70 * time.Millisecond},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, retryAfter(c.quorum, c.granted, c.rem), "retryAfter(%d, %d, %v)", c.quorum, c.granted, c.rem)
	}
}

func TestValidity(t *testing.T) {
	const ttl = 10 * time.Second
	drift := storekit.Drift(ttl) // 102 ms
	cases := []struct {
		granted []time.Duration
		elapsed time.Duration
		want    time.Duration
	}{
		{[]time.Duration{ttl, ttl}, 0, ttl - drift},
		{[]time.Duration{ttl, ttl}, 40 * time.Millisecond, ttl - 40*time.Millisecond - drift},
		// Own-token retries report what is left on each node: a quorum
		// keeps the key as long as its quorum-th longest.
		{[]time.Duration{ttl, 4 * time.Second, 7 * time.Second}, 0, 7*time.Second - drift},
		{[]time.Duration{4 * time.Second, 7 * time.Second}, 0, 4*time.Second - drift},
		{[]time.Duration{ttl, ttl}, ttl, -drift}, // spent
		{[]time.Duration{ttl}, 0, 0},             // no quorum
	}
	for _, c := range cases {
		assert.Equal(t, c.want, validity(ttl, 2, c.granted, c.elapsed), "validity(%v, elapsed %v)", c.granted, c.elapsed)
	}
}

func TestOutcome(t *testing.T) {
	type want struct {
		out     store.Outcome
		unknown bool
	}
	cases := []struct {
		n, ours, other, gone, failed int
		want                         want
	}{
		{3, 3, 0, 0, 0, want{out: store.OK}},
		{3, 2, 1, 0, 0, want{out: store.OK}}, // a contender took an expired node
		{3, 2, 0, 0, 1, want{out: store.OK}}, // one node down
		{3, 0, 3, 0, 0, want{out: store.HeldByOther}},
		{3, 1, 2, 0, 0, want{out: store.HeldByOther}}, // the successor holds a quorum
		{3, 0, 0, 3, 0, want{out: store.Gone}},
		{3, 1, 0, 2, 0, want{out: store.Gone}},        // expired on a quorum
		{3, 0, 1, 2, 0, want{out: store.Gone}},        // a contender's partial lock only
		{3, 1, 1, 1, 0, want{out: store.Gone}},        // nobody can hold a quorum
		{3, 1, 0, 1, 1, want{unknown: true}},          // ours + failed make a quorum
		{3, 0, 0, 1, 2, want{unknown: true}},          // too few answers
		{3, 0, 1, 1, 1, want{out: store.HeldByOther}}, // the failed node may be the other's
		{5, 3, 0, 0, 2, want{out: store.OK}},
		{5, 2, 2, 1, 0, want{out: store.Gone}},
		{5, 2, 0, 1, 2, want{unknown: true}},
		{5, 0, 2, 2, 1, want{out: store.HeldByOther}},
		{5, 0, 1, 3, 1, want{out: store.Gone}},
		{4, 2, 0, 2, 0, want{out: store.Gone}}, // quorum of four is three
		{4, 0, 0, 2, 2, want{out: store.Gone}}, // we can hold at most two
	}
	for _, c := range cases {
		tl := counts(c.n, c.ours, c.other, c.gone, c.failed)
		out, unknown := tl.outcome()
		assert.Equal(t, c.want, want{out, unknown}, "%+v", c)
	}
}

// TestAdd: each kind of answer is counted where it belongs, with what the
// decision needs from it.
func TestAdd(t *testing.T) {
	tl := newTally(5)
	tl.add(answer{i: 3, grant: store.Grant{Acquired: true, TTL: time.Second}})
	tl.add(answer{i: 4, grant: store.Grant{Remaining: time.Minute}})
	tl.add(answer{i: 1, grant: store.Grant{Remaining: time.Hour}})
	tl.add(answer{i: 0, out: store.Gone})
	tl.add(answer{i: 2, err: store.ErrNotApplied})
	assert.Equal(t, []int{3}, tl.oursAt)
	assert.Equal(t, []time.Duration{time.Second}, tl.ttls)
	assert.Equal(t, []time.Duration{time.Minute, time.Hour}, tl.remaining)
	assert.Equal(t, 1, tl.firstOther)
	assert.Equal(t, []bool{true, true, true, true, true}, tl.seen)
	assert.Equal(t, [4]int{1, 2, 1, 1}, [4]int{tl.ours, tl.other, tl.gone, tl.failed})
	assert.Equal(t, 0, tl.outstanding())
	o := newTally(3)
	o.add(answer{i: 0, out: store.StillHeld})
	o.add(answer{i: 1, out: store.HeldByOther})
	assert.Equal(t, [2]int{1, 1}, [2]int{o.ours, o.other})
}

// TestSettledGrace: once a split's lower nodes answered, the wait for the
// rest is brief (twice what the answers took) unless this token can still
// win with a node not presumed down: then half the node timeout. A refusal
// and a split already lost wait briefly whatever the nodes.
func TestSettledGrace(t *testing.T) {
	const took, timeout = 2 * time.Millisecond, 100 * time.Millisecond
	brief := 2*took + time.Millisecond
	split := func(quiet ...int) tally { // 5 nodes: ours 0 and 1, other 2, 3 and 4 silent
		tl := newTally(5)
		tl.quiet = make([]atomic.Bool, 5)
		for _, i := range quiet {
			tl.quiet[i].Store(true)
		}
		tl.add(answer{i: 0, grant: store.Grant{Acquired: true, TTL: time.Second}})
		tl.add(answer{i: 1, grant: store.Grant{Acquired: true, TTL: time.Second}})
		tl.add(answer{i: 2, grant: store.Grant{Remaining: time.Minute}})
		return tl
	}
	for name, c := range map[string]struct {
		tl   tally
		want time.Duration
	}{
		"winnable, a live node silent":   {split(4), timeout / 2},
		"winnable, silent nodes down":    {split(3, 4), brief},
		"winnable, no flags (none down)": {func() tally { tl := split(); tl.quiet = nil; return tl }(), timeout / 2},
	} {
		done, grace := c.tl.settled(took, timeout)
		assert.False(t, done, name)
		assert.Equal(t, c.want, grace, name)
	}
	lost := newTally(5) // ours 4, others 0 to 2: refused
	lost.add(answer{i: 4, grant: store.Grant{Acquired: true, TTL: time.Second}})
	for i := range 3 {
		lost.add(answer{i: i, grant: store.Grant{Remaining: time.Minute}})
	}
	done, grace := lost.settled(took, timeout)
	assert.Equal(t, [2]any{false, brief}, [2]any{done, grace}, "a refusal with node 3 silent")
}

func TestNodeTimeout(t *testing.T) {
	s := &Store{}
	for ttl, want := range map[time.Duration]time.Duration{
		0:                      100 * time.Millisecond, // a Release
		5 * time.Millisecond:   time.Millisecond,
		20 * time.Millisecond:  2 * time.Millisecond,
		500 * time.Millisecond: 50 * time.Millisecond,
		time.Second:            100 * time.Millisecond,
		time.Hour:              100 * time.Millisecond,
	} {
		assert.Equal(t, want, s.nodeTimeout(ttl), "ttl %v", ttl)
	}
	WithNodeTimeout(time.Second)(s)
	assert.Equal(t, time.Second, s.nodeTimeout(time.Millisecond))
	WithNodeTimeout(-1)(s)
	assert.Equal(t, 100*time.Millisecond, s.nodeTimeout(time.Hour))
}
