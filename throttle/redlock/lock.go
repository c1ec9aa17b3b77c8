package redlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

// acquisition is one Acquire's state across the attempts of a split vote.
type acquisition struct {
	req   store.Request
	calls sync.WaitGroup // every node call and its clean-up
}

// round is one attempt of an acquisition.
type round struct {
	tally
	decided chan struct{}
	keep    bool // set before decided closes: the grants stay ours (won, or a split vote's keeper)
}

// maxTries bounds the keeper's attempts at a split vote: contenders that
// keep arriving may take its missing nodes round after round (200 at once
// on a loaded machine outlasted 8 tries; each of them was refused, and
// nobody held the key).
const maxTries = 16

// Acquire holds req.Key once a quorum of nodes granted it (see the package
// documentation); the grant's TTL is the lock's validity. It is refused once
// a quorum answered and none can grant. A split vote, where this token holds
// some nodes and others the rest, is refused unless this token holds the
// lowest node that answered: then it is retried, up to maxTries times
// within a quarter of the TTL. One that still stands then is a refusal if
// others may hold a quorum of nodes, else an error matching store.ErrBusy
// and errNoQuorum: no token holds the key, and the limiter answers 503,
// never letting it through.
func (s *Store) Acquire(ctx context.Context, req store.Request) (store.Grant, error) {
	if err := s.Refuses(req); err != nil {
		return store.Grant{}, err
	}
	if err := ctx.Err(); err != nil {
		return store.Grant{}, notApplied("acquire", err)
	}
	a := &acquisition{req: req}
	limit := time.Now().Add(req.TTL / 4)
	for try := 1; ; try++ {
		r := &round{tally: newTally(len(s.nodes)), decided: make(chan struct{})}
		r.quiet = s.quiet
		g, err := s.attempt(ctx, a, r)
		if err != nil || g.Acquired || !r.keep {
			return g, err
		}
		wait, due := a.pause(r, try, retryEnd(ctx, limit))
		var cause error
		if due {
			timer := time.NewTimer(wait)
			select {
			case <-timer.C:
				continue
			case <-ctx.Done():
				cause = ctx.Err()
			}
			timer.Stop()
		}
		return s.unresolved(ctx, a, r, try, cause)
	}
}

// retryEnd is when the retries of a split vote end: by limit, and early
// enough for the last one to be answered before ctx's deadline. A split
// given up then is load (ErrBusy), where one cut short by the deadline would
// look like a store that did not answer (which a Dedupe lets through). The
// deadline is read before each retry: a limiter's moves on while the store
// answers (see Liveness).
func retryEnd(ctx context.Context, limit time.Time) time.Time {
	if d, ok := ctx.Deadline(); ok && d.Before(limit) {
		return d
	}
	return limit
}

// pause says how long the keeper of a split vote waits before its next try
// after try attempts, and whether one is due. It retries once the others
// let go of their grants: they decide when it does and release at once, in
// a round trip (the first answer's time: a burst's queueing inflates the
// others). A retry is a round trip that must end by end; the keeper waits
// at most half the time left, so that its last try is squeezed in and a
// deadline that moves with the store's answers sees one every half of it.
func (a *acquisition) pause(r *round, try int, end time.Time) (time.Duration, bool) {
	rtt := max(r.first, time.Millisecond)
	lo := time.Duration(try) * rtt
	wait, left := lo+rand.N(lo), time.Until(end)-rtt
	wait = min(wait, left/2)
	return wait, try < maxTries && 0 <= wait && wait <= left
}

// unresolved gives up the split vote a keeps after try attempts, or when
// the caller left (cause): it releases its grants, and refuses when another
// token may hold a quorum; else no token holds the key.
func (s *Store) unresolved(ctx context.Context, a *acquisition, r *round, try int, cause error) (store.Grant, error) {
	s.spawn(func() { // every grant, late ones too, without making the caller wait
		a.calls.Wait()
		s.release(ctx, a.req, func(int) bool { return true })
	})
	if r.other+r.outstanding() >= r.quorum && cause == nil { // another token may hold a quorum
		return r.refusal(), nil
	}
	err := fmt.Errorf("%w: %w: acquire: a split vote: no token held a quorum after %d attempts", store.ErrBusy, errNoQuorum, try)
	if cause != nil {
		err = fmt.Errorf("%w (%w)", err, cause)
	}
	return store.Grant{}, err
}

// attempt asks every node for a.req and decides, deciding a split vote as
// soon as a quorum answered: r.keep without a grant when r is to be retried.
func (s *Store) attempt(ctx context.Context, a *acquisition, r *round) (store.Grant, error) {
	req, t := a.req, &r.tally
	start, timeout := time.Now(), s.nodeTimeout(req.TTL)
	a.calls.Add(len(s.nodes))
	cause := s.fan(ctx, timeout, t, t.settled, func(ctx context.Context, node store.Store) (an answer) {
		an.grant, an.err = node.Acquire(ctx, req)
		return an
	}, func(an answer) { s.cleanUp(ctx, a, r, an) })
	v := t.verdict()
	took := time.Since(start)
	if left := validity(req.TTL, t.quorum, t.ttls, took); v == won && left > 0 {
		r.keep = true
		close(r.decided)
		if t.outstanding() > 0 {
			s.awaitLate(a)
		}
		return store.Grant{Acquired: true, TTL: left, Holds: 1}, nil
	}
	split := t.split() && cause == nil
	r.decide(split)
	if !r.keep && len(t.oursAt) > 0 {
		s.release(ctx, req, func(i int) bool { return slices.Contains(t.oursAt, i) })
	}
	switch {
	case r.keep:
		return store.Grant{}, nil
	case v == won:
		return store.Grant{}, fmt.Errorf("%w: acquire: %d nodes granted in %v, too late for a TTL of %v",
			errNoQuorum, t.ours, took, req.TTL)
	case v == refused || split:
		return r.refusal(), nil
	}
	return store.Grant{}, noQuorum("acquire", t, cause)
}

// decide settles a round that was not won. In a split vote the holder of
// the lowest node that answered (the keeper) keeps its grants and retries
// while the others release theirs and are refused: the keeper is about to
// hold the key. Had they retried too, lest the keeper fail, their passing
// grants took the nodes it needed round after round (with two of five
// nodes killed, a burst of 20 copies then admitted none).
func (r *round) decide(split bool) {
	r.keep = split && slices.Min(r.oursAt) < r.firstOther
	close(r.decided)
}

// awaitLate keeps a's key and token in s.pending until a's node calls
// end, so that a Release that comes first waits for them: a grant that
// landed after the release would hold the key on its node until it
// expires.
func (s *Store) awaitLate(a *acquisition) {
	id, done := a.req.Key+"\x00"+a.req.Token, make(chan struct{})
	s.pending.Store(id, done)
	s.spawn(func() {
		a.calls.Wait()
		close(done)
		s.pending.CompareAndDelete(id, done)
	})
}

// refusal is r's answer when other tokens hold the key: when the first
// quorum of the nodes they hold may be free.
func (r *round) refusal() store.Grant {
	return store.Grant{Remaining: retryAfter(min(r.quorum, r.other), 0, r.remaining)}
}

// cleanUp releases, once r is decided and drops its grants, an's uncounted
// grant or an error that may hide one.
func (s *Store) cleanUp(ctx context.Context, a *acquisition, r *round, an answer) {
	defer a.calls.Done()
	<-r.decided
	if !r.keep && (applied(an.err) || an.grant.Acquired && !r.seen[an.i]) {
		s.release(ctx, a.req, func(i int) bool { return i == an.i })
	}
}

// release frees req's key on the nodes that match, in parallel, and waits
// for one try on each: a clean-up, with a context that ctx's cancellation
// does not end. A node that gave no answer in time is tried again in the
// background with longer waits (2, 4 and 8 node timeouts), lest a loaded
// node keep a grant that nobody owns until it expires.
func (s *Store) release(ctx context.Context, req store.Request, match func(i int) bool) {
	ctx = context.WithoutCancel(ctx)
	d := s.nodeTimeout(0)
	var wg sync.WaitGroup
	for i, node := range s.nodes {
		if match(i) {
			wg.Go(func() {
				if !releaseOn(ctx, node, req, d) {
					s.spawn(func() {
						for wait := 2 * d; wait <= 8*d; wait *= 2 {
							if releaseOn(ctx, node, req, wait) {
								return
							}
						}
					})
				}
			})
		}
	}
	wg.Wait()
}

// releaseOn releases req's key on node within d, and reports whether the
// node answered.
func releaseOn(ctx context.Context, node store.Store, req store.Request, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	_, err := node.Release(ctx, req.Key, req.Token)
	return err == nil
}

// Release frees key on every node where token holds it: OK once a quorum
// had token, else HeldByOther or Gone as a quorum says. ctx's cancellation
// ends the wait, not the node calls, to leave no lock behind.
func (s *Store) Release(ctx context.Context, key, token string) (store.Outcome, error) {
	return s.update(ctx, key, token, 0)
}

// Extend sets key's time to live to ttl on every node where token holds it,
// with Release's outcomes; an OK that comes after the new validity ran out
// is an error, since some node may have let the key go already. As for
// Release, ctx's cancellation ends the wait, not the node calls: every node
// that answers is extended, not only the first quorum.
func (s *Store) Extend(ctx context.Context, key, token string, ttl time.Duration) (store.Outcome, error) {
	if ttl <= 0 {
		return 0, invalid("ttl %v is not positive", ttl)
	}
	return s.update(ctx, key, token, ttl)
}

// update releases key (ttl 0) or extends it on every node.
func (s *Store) update(ctx context.Context, key, token string, ttl time.Duration) (store.Outcome, error) {
	op := "extend"
	if ttl == 0 {
		op = "release"
	}
	if err := storekit.CheckLock("redlock", key, token, max(ttl, 1)); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, notApplied(op, err)
	}
	if late, ok := s.pending.Load(key + "\x00" + token); ok && ttl == 0 {
		wait := time.NewTimer(2 * s.nodeTimeout(0))
		select { // a grant landing after the release would stay until it expires
		case <-late.(chan struct{}):
		case <-wait.C:
		}
		wait.Stop()
	}
	start, timeout := time.Now(), s.nodeTimeout(ttl)
	t := newTally(len(s.nodes))
	cause := s.fan(ctx, timeout, &t, func(time.Duration, time.Duration) (bool, time.Duration) {
		return t.ours >= t.quorum || t.outstanding() == 0, 0
	},
		func(ctx context.Context, node store.Store) (a answer) {
			if ttl == 0 {
				a.out, a.err = node.Release(ctx, key, token)
			} else {
				a.out, a.err = node.Extend(ctx, key, token, ttl)
			}
			return a
		}, func(answer) {})
	out, unknown := t.outcome()
	switch elapsed := time.Since(start); {
	case unknown:
		return 0, noQuorum(op, &t, cause)
	case ttl > 0 && out == store.OK && elapsed >= ttl-storekit.Drift(ttl):
		return 0, fmt.Errorf("%w: extend: %d nodes extended in %v, too late for a TTL of %v", errNoQuorum, t.ours, elapsed, ttl)
	}
	return out, nil
}

// Watch returns a channel told when key is released on any node, and the
// stop function to call when done. It fails only when no node could be
// watched. A wake-up is a hint: a contender's partial lock wakes it too.
func (s *Store) Watch(ctx context.Context, key string) (<-chan struct{}, func(), error) {
	if key == "" {
		return nil, nil, invalid("empty key")
	}
	wake, quit := make(chan struct{}, 1), make(chan struct{})
	stops, errs := make([]func(), len(s.nodes)), make([]error, len(s.nodes))
	var subs, fwd sync.WaitGroup
	for i, node := range s.nodes {
		subs.Go(func() {
			var ch <-chan struct{}
			errs[i] = errors.New("not a store.Notifier")
			if n, ok := node.(store.Notifier); ok {
				ch, stops[i], errs[i] = n.Watch(ctx, key)
			}
			if errs[i] == nil {
				fwd.Go(func() { forward(ch, wake, quit) })
			}
		})
	}
	subs.Wait()
	if !slices.Contains(errs, nil) {
		return nil, nil, fmt.Errorf("redlock: watch: no node could be watched: %w", errors.Join(errs...))
	}
	return wake, sync.OnceFunc(func() {
		close(quit)
		fwd.Wait()
		for i, stop := range stops {
			if errs[i] == nil {
				stop()
			}
		}
	}), nil
}

// forward passes one node's signals on to wake, dropping those that find
// one pending, until ch or quit closes.
func forward(ch <-chan struct{}, wake chan<- struct{}, quit <-chan struct{}) {
	for {
		select {
		case <-quit:
			return
		case _, ok := <-ch:
			if !ok {
				return
			}
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}
}
