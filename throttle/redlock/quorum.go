package redlock

import (
	"slices"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// The arithmetic of the quorum, kept apart from the network so that it can
// be tested on its own.

// quorumOf returns the number of nodes a decision needs among n: a strict
// majority, so that two quorums always share a node.
func quorumOf(n int) int { return n/2 + 1 }

// verdict is where an acquisition stands after some nodes answered.
type verdict uint8

const (
	pending verdict = iota // wait for more answers
	won                    // a quorum granted the key
	refused                // the key is held: a quorum answered, no quorum granted
	failed                 // too few nodes answered to decide: a store failure
)

// tally counts the answers to an acquisition.
type tally struct {
	n, quorum int
	granted   int // nodes that gave us the key
	held      int // nodes that answered that somebody else holds it
	failed    int // nodes that failed or did not answer in time
}

func (t tally) outstanding() int { return t.n - t.granted - t.held - t.failed }

// verdict decides as soon as the answers so far settle the acquisition:
//
//   - won once a quorum granted;
//   - otherwise, once a quorum can no longer grant (granted + outstanding <
//     quorum): refused when a quorum of nodes answered (granted + held >=
//     quorum), so that the answer is the nodes' and not a guess; failed
//     when not even the outstanding nodes can make the answers a quorum.
//
// In between it waits. With every node answered (outstanding 0) one of the
// three holds. On a healthy deployment the decision comes with the
// quorum-th answer, whether the key is free or held, so an acquisition
// costs the quorum-th fastest node's round trip, not the slowest's.
func (t tally) verdict() verdict {
	o := t.outstanding()
	switch {
	case t.granted >= t.quorum:
		return won
	case t.granted+o >= t.quorum:
		return pending
	case t.granted+t.held >= t.quorum:
		return refused
	case t.granted+t.held+o < t.quorum:
		return failed
	}
	return pending
}

// retryAfter answers a refused acquisition: how long until a quorum of
// nodes could be free. The nodes that granted the key to us are freed at
// once (the refusal releases them), so quorum-granted more nodes must come
// free, the first of them when its holder's key expires: the
// (quorum-granted)-th smallest remaining time among the held nodes. A node
// whose key has no expiry (-1) never comes free by itself; if one of those
// is needed the answer is -1, as store.Grant.Remaining says for such a key.
// Nodes that failed are not counted on.
//
// The refusal is decided as soon as a quorum of nodes answered, so the
// nodes still silent then are not counted on either: with fewer answers
// the figure can only be larger, never earlier than a quorum could really
// come free. It is exact when one holder has the key on every node, as
// usual (its nodes' remaining times differ by the moments between its
// SETs).
func retryAfter(quorum, granted int, remaining []time.Duration) time.Duration {
	k := quorum - granted
	if k <= 0 || k > len(remaining) {
		return time.Millisecond // cannot happen for a refused tally
	}
	rs := slices.Clone(remaining)
	slices.SortFunc(rs, func(a, b time.Duration) int {
		switch {
		case a == b:
			return 0
		case a < 0: // no expiry: after every finite time
			return 1
		case b < 0:
			return -1
		case a < b:
			return -1
		}
		return 1
	})
	return rs[k-1]
}

// validity is what is left of a lock that a quorum granted: the TTL the
// granting nodes reported (the quorum-th longest, so that a quorum of them
// keeps the key that long; an own-token retry reports what is left), less
// the time the acquisition took and the drift allowance, as the Redlock
// algorithm prescribes. Zero or less means the lock may already be gone on
// some node of the quorum.
//
// An own-token retry's validity is measured from the retry: it can exceed
// the first grant's by up to the first call's duration, which the first
// estimate had to count whole although its nodes set the key during it.
func validity(ttl time.Duration, quorum int, granted []time.Duration, elapsed time.Duration) time.Duration {
	if len(granted) < quorum {
		return 0
	}
	ts := slices.Clone(granted)
	slices.Sort(ts)
	held := ts[len(ts)-quorum] // the quorum-th longest
	return held - elapsed - store.Drift(ttl)
}

// outcomes counts the answers to a Release or an Extend.
type outcomes struct {
	n, quorum int
	ours      int // OK (or StillHeld): the node had our token
	other     int // HeldByOther
	gone      int // Gone
	failed    int // an error, or no answer in time
}

// decided reports whether the answers so far settle a Release or Extend
// before every node answered: only a quorum of OK does (the others keep
// going in the background); anything else waits for every node, since it
// depends on all of them.
func (o outcomes) decided() bool {
	return o.ours >= o.quorum || o.ours+o.other+o.gone+o.failed == o.n
}

// outcome turns the answers into one Outcome, or unknown when it depends
// on nodes that failed:
//
//   - OK when a quorum of nodes had our token: we held the lock, and Release
//     freed it (Extend extended it) on that quorum;
//   - unknown when ours and the failed nodes together make a quorum: we may
//     have held it, nobody can tell;
//   - HeldByOther when other tokens hold, or may hold (counting the failed
//     nodes), a quorum: somebody else may hold the lock now;
//   - Gone otherwise: neither we nor anybody else can hold a quorum, the
//     lock expired (a contender's partial locks on a minority of nodes
//     do not make it held).
//
// Nodes that disagree are normal: a key expires on each node by that node's
// clock, and contenders leave short-lived partial locks. HeldByOther and
// Gone both mean, for the caller, that its lease was lost.
func (o outcomes) outcome() (out store.Outcome, unknown bool) {
	switch {
	case o.ours >= o.quorum:
		return store.OK, false
	case o.ours+o.failed >= o.quorum:
		return 0, true
	case o.other+o.failed >= o.quorum:
		return store.HeldByOther, false
	}
	return store.Gone, false
}
