package redlock

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

// answer is one node's reply: a grant to Acquire, an outcome otherwise.
type answer struct {
	i     int
	grant store.Grant
	out   store.Outcome
	err   error
}

// tally counts the answers to one call: ours granted or held by our token,
// other held by another, gone without the key, failed with an error or late.
type tally struct {
	n, quorum, ours, other, gone, failed int
	first                                time.Duration // how long the first answer took

	firstOther      int             // the lowest node held by another token, n if none
	ttls, remaining []time.Duration // the grants' TTLs; how long the other holders keep the key
	oursAt          []int           // the nodes that granted the key
	seen            []bool          // the nodes whose answer was counted
	errs            []error         // each node's error, nil where it answered
	quiet           []atomic.Bool   // the nodes presumed down (Store.quiet); nil: none
}

func newTally(n int) tally {
	return tally{n: n, quorum: n/2 + 1, firstOther: n, seen: make([]bool, n), errs: make([]error, n)}
}

func (t *tally) add(a answer) {
	t.seen[a.i] = true
	switch {
	case a.err != nil:
		t.failed++
		t.errs[a.i] = a.err
	case a.grant.Acquired || a.out == store.OK || a.out == store.StillHeld:
		t.ours++
		t.ttls = append(t.ttls, a.grant.TTL)
		t.oursAt = append(t.oursAt, a.i)
	case a.out == store.Gone:
		t.gone++
	default:
		t.other++
		t.remaining = append(t.remaining, a.grant.Remaining)
		t.firstOther = min(t.firstOther, a.i)
	}
}

// settled is fan's rule for an acquisition: whether to stop waiting, and
// when the answers so far took took, how much longer to wait at most for
// the others (0: until the node timeout). A split vote or a refusal first
// waits, up to the node timeout, for the nodes below the lowest one it
// knows held: one of them may be ours, and the holder of the lowest node is
// the keeper (round.decide). Deciding without them, the voter holding node
// 0 could miss that grant while the others saw it held: nobody would keep,
// and nobody win. Then it waits briefly for the last nodes, which may be
// down; but a split this token can still win waits up to half the node
// timeout for each node not presumed down, lest a slow node's grant be
// missed and the key refused while no token holds it. A failure without
// grants waits for the other quick refusals.
func (t *tally) settled(took, timeout time.Duration) (bool, time.Duration) {
	all := t.outstanding() == 0
	switch v := t.verdict(); {
	case v == won:
		return true, 0
	case v == refused || t.split():
		if !t.answeredBelow(t.lowest()) {
			return all, 0
		}
		grace := 2*took + time.Millisecond
		if v == pending && t.awaitsLive() {
			grace = max(grace, timeout/2)
		}
		return all, grace
	case v == failed:
		return all || t.ours > 0 || slices.ContainsFunc(t.errs, applied), 0
	}
	return false, 0
}

// awaitsLive reports whether a node not presumed down has yet to answer.
func (t *tally) awaitsLive() bool {
	for i, seen := range t.seen {
		if !seen && (t.quiet == nil || !t.quiet[i].Load()) {
			return true
		}
	}
	return false
}

// lowest is the lowest node known held, by this token or another; n if none.
func (t *tally) lowest() int {
	if len(t.oursAt) > 0 {
		return min(t.firstOther, slices.Min(t.oursAt))
	}
	return t.firstOther
}

// answeredBelow reports whether every node before node i has answered.
func (t *tally) answeredBelow(i int) bool { return !slices.Contains(t.seen[:i], false) }

func (t *tally) answered() int { return t.ours + t.other + t.gone }

// split reports a split vote: a quorum answered, and this token and others
// each hold some of the nodes but none a quorum.
func (t *tally) split() bool {
	return t.ours > 0 && t.other > 0 && t.ours < t.quorum && t.answered() >= t.quorum
}

func (t *tally) outstanding() int { return t.n - t.answered() - t.failed }

type verdict uint8

const (
	pending verdict = iota // wait for more answers
	won                    // a quorum granted the key
	refused                // a quorum answered and no quorum can grant: the key is held
	failed                 // too few nodes answered to decide
)

// verdict decides an acquisition as soon as the answers settle it; a
// refusal needs a quorum of answers, so that it is not a guess.
func (t *tally) verdict() verdict {
	o := t.outstanding()
	switch {
	case t.ours >= t.quorum:
		return won
	case t.ours+o >= t.quorum:
		return pending
	case t.ours+t.other >= t.quorum:
		return refused
	case t.ours+t.other+o < t.quorum:
		return failed
	}
	return pending
}

// outcome decides a Release or Extend (see Release), or says it is unknown:
// ours and the failed nodes could make a quorum.
func (t *tally) outcome() (out store.Outcome, unknown bool) {
	switch {
	case t.ours >= t.quorum:
		return store.OK, false
	case t.ours+t.failed >= t.quorum:
		return 0, true
	case t.other+t.failed >= t.quorum:
		return store.HeldByOther, false
	}
	return store.Gone, false
}

// validity is the quorum-th longest TTL granted (a retry's own nodes report
// what is left), less the time taken and the drift allowance. It sorts ttls.
func validity(ttl time.Duration, quorum int, ttls []time.Duration, elapsed time.Duration) time.Duration {
	if len(ttls) < quorum {
		return 0
	}
	slices.Sort(ttls)
	return ttls[len(ttls)-quorum] - elapsed - storekit.Drift(ttl)
}

// retryAfter is when quorum-granted held nodes could be free, never early;
// it sorts remaining as unsigned, so -1 (no expiry) comes last.
func retryAfter(quorum, granted int, remaining []time.Duration) time.Duration {
	k := quorum - granted
	if k <= 0 || k > len(remaining) {
		return time.Millisecond // not a refusal
	}
	slices.SortFunc(remaining, func(a, b time.Duration) int { return cmp.Compare(uint64(a), uint64(b)) })
	return remaining[k-1]
}

// fan runs call, then then, on every node in parallel, each bounded by
// timeout alone: ctx's cancellation ends the wait, never a node call, so
// that every call completes or is cleaned up. It counts the answers into t
// until settled says done; once it gives a grace, for at most that long
// again (the silent nodes stay outstanding); and until the node timeout
// (with a margin) or ctx ends the wait: the silent nodes then fail.
func (s *Store) fan(ctx context.Context, timeout time.Duration, t *tally, settled func(took, timeout time.Duration) (bool, time.Duration),
	call func(context.Context, store.Store) answer, then func(answer)) (cause error) {
	answers := make(chan answer, len(s.nodes))
	parent := context.WithoutCancel(ctx)
	for i, node := range s.nodes {
		s.spawn(func() {
			a := s.ask(parent, timeout, i, node, call)
			answers <- a
			then(a)
		})
	}
	start, wait := time.Now(), timeout+timeout/4+2*time.Millisecond
	timer, early := time.NewTimer(wait), false
	defer timer.Stop()
	for {
		took := time.Since(start)
		done, grace := settled(took, timeout)
		if done {
			return cause
		}
		if grace > 0 && !early {
			early = true
			timer.Reset(min(grace, wait-took))
		}
		select {
		case a := <-answers:
			if t.first == 0 {
				t.first = time.Since(start)
			}
			t.add(a)
			continue
		case <-timer.C:
			if early {
				return cause
			}
		case <-ctx.Done():
			cause = ctx.Err()
		}
		for i, ok := range t.seen {
			if !ok {
				t.failed++
				t.errs[i] = cmp.Or(cause, fmt.Errorf("no answer within %v", timeout))
			}
		}
	}
}

// ask makes call to node i, bounded by timeout alone, tells the limiters
// of its answer (see Liveness), and presumes the node down until its next
// answer if it had none in time.
func (s *Store) ask(parent context.Context, timeout time.Duration, i int, node store.Store,
	call func(context.Context, store.Store) answer) answer {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	a := call(ctx, node)
	if a.err == nil {
		s.live.Answered()
	}
	s.quiet[i].Store(a.err != nil && ctx.Err() != nil)
	a.i = i
	return a
}
