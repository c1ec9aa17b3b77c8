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

// round is one attempt of an acquisition.
type round struct {
	tally
	decided chan struct{}
	keep    bool // set before decided closes: the grants stay ours
	done    sync.WaitGroup
	took    time.Duration
}

// Acquire holds req.Key once a quorum of nodes granted it (see the package
// documentation); the grant's TTL is the lock's validity. It is refused once
// a quorum answered and none can grant. A split vote is tried up to 3 times.
func (s *Store) Acquire(ctx context.Context, req store.Request) (store.Grant, error) {
	if err := s.Refuses(req); err != nil {
		return store.Grant{}, err
	}
	if err := ctx.Err(); err != nil {
		return store.Grant{}, notApplied("acquire", err)
	}
	var refusal store.Grant // the last split vote's answer
	for try := 0; ; try++ {
		r := &round{tally: newTally(len(s.nodes)), decided: make(chan struct{})}
		g, split, err := s.attempt(ctx, r, req, try < 3)
		switch {
		case try > 0 && err != nil: // a retry's failure leaves the refusal
			return refusal, nil
		case !split:
			return g, err
		}
		if refusal = g; !s.pause(ctx, r, req) {
			return refusal, nil
		}
	}
}

// attempt asks every node for req and decides; split marks a split vote to
// retry, where the holder of the lowest node that answered keeps its grants.
func (s *Store) attempt(ctx context.Context, r *round, req store.Request, mayRetry bool) (g store.Grant, split bool, err error) {
	start, timeout := time.Now(), s.nodeTimeout(req.TTL)
	r.done.Add(len(s.nodes))
	t := &r.tally
	cause := s.fan(ctx, ctx, timeout, t, func() bool {
		// A failure without grants waits for the other quick refusals.
		v := t.verdict()
		return v != pending && (v != failed || t.ours > 0 || t.outstanding() == 0 || slices.ContainsFunc(t.errs, applied))
	}, func(ctx context.Context, node store.Store) (a answer) {
		a.grant, a.err = node.Acquire(ctx, req)
		return a
	}, func(a answer) { s.cleanUp(ctx, r, req, a) })
	v, took := t.verdict(), time.Since(start)
	r.took = took // for the pause before a retry
	if left := validity(req.TTL, t.quorum, t.ttls, took); v == won && left > 0 {
		r.keep = true
		close(r.decided)
		return store.Grant{Acquired: true, TTL: left, Holds: 1}, false, nil
	}
	split = v == refused && t.ours > 0 && mayRetry
	r.keep = split && slices.Min(t.oursAt) < t.firstOther
	close(r.decided)
	if !r.keep && len(t.oursAt) > 0 {
		s.release(ctx, req, func(i int) bool { return slices.Contains(t.oursAt, i) })
	}
	switch v {
	case won:
		return g, false, fmt.Errorf("%w: acquire: %d nodes granted in %v, too late for a TTL of %v",
			errNoQuorum, t.ours, took, req.TTL)
	case refused:
		return store.Grant{Remaining: retryAfter(t.quorum, t.ours, t.remaining)}, split, nil
	}
	return g, false, noQuorum("acquire", t, cause)
}

// pause waits before a split vote's retry: half to one attempt's time if r
// kept its grants, else one to three after r's releases (which must not free
// the retry's lock). If ctx ends first, it releases what r kept.
func (s *Store) pause(ctx context.Context, r *round, req store.Request) bool {
	lo, span := r.took, 2*r.took
	if r.keep {
		lo, span = r.took/2, r.took/2
	} else {
		r.done.Wait()
	}
	t := time.NewTimer(lo + rand.N(span+time.Millisecond))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	}
	if r.keep {
		r.done.Wait() // its late grants are kept too
		s.release(ctx, req, func(int) bool { return true })
	}
	return false
}

// cleanUp releases, once r is decided and drops its grants, a's uncounted
// grant or an error that may hide one.
func (s *Store) cleanUp(ctx context.Context, r *round, req store.Request, a answer) {
	defer r.done.Done()
	<-r.decided
	if !r.keep && (applied(a.err) || a.grant.Acquired && !r.seen[a.i]) {
		s.release(ctx, req, func(i int) bool { return i == a.i })
	}
}

// release frees req's key on the nodes that match, in parallel, and waits:
// a clean-up, with a context that ctx's cancellation does not end.
func (s *Store) release(ctx context.Context, req store.Request, match func(i int) bool) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.nodeTimeout(0))
	defer cancel()
	var wg sync.WaitGroup
	for i, node := range s.nodes {
		if match(i) {
			wg.Go(func() { _, _ = node.Release(rctx, req.Key, req.Token) })
		}
	}
	wg.Wait()
}

// Release frees key on every node where token holds it: OK once a quorum
// had token, else HeldByOther or Gone as a quorum says. ctx's cancellation
// ends the wait, not the node calls, to leave no lock behind.
func (s *Store) Release(ctx context.Context, key, token string) (store.Outcome, error) {
	return s.update(ctx, key, token, 0)
}

// Extend sets key's time to live to ttl on every node where token holds it,
// with Release's outcomes; an OK that comes after the new validity ran out
// is an error, since some node may have let the key go already.
func (s *Store) Extend(ctx context.Context, key, token string, ttl time.Duration) (store.Outcome, error) {
	if ttl <= 0 {
		return 0, invalid("ttl %v is not positive", ttl)
	}
	return s.update(ctx, key, token, ttl)
}

// update releases key (ttl 0) or extends it on every node.
func (s *Store) update(ctx context.Context, key, token string, ttl time.Duration) (store.Outcome, error) {
	op, parent := "extend", ctx
	if ttl == 0 {
		op, parent = "release", context.WithoutCancel(ctx)
	}
	if err := storekit.CheckLock("redlock", key, token, max(ttl, 1)); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, notApplied(op, err)
	}
	start, timeout := time.Now(), s.nodeTimeout(ttl)
	t := newTally(len(s.nodes))
	cause := s.fan(ctx, parent, timeout, &t, func() bool { return t.ours >= t.quorum || t.outstanding() == 0 },
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
