package storetest_test

import (
	"fmt"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// The naive store's semaphores: key → token → end of its place. Bugs:
// "holders-unbounded" grants every place asked for, "holders-no-expiry"
// keeps a place whose time ended.

// places returns key's holders whose time has not ended (the caller holds
// s.mu), nil when there are none.
func (s *naiveStore) places(key string) map[string]time.Time {
	ps := s.sems[key]
	for tok, until := range ps {
		if time.Now().After(until) && s.bug != "holders-no-expiry" {
			delete(ps, tok)
		}
	}
	if len(ps) == 0 {
		delete(s.sems, key)
		return nil
	}
	return ps
}

// semHeld reports how long key's holders keep a plain request out.
func (s *naiveStore) semHeld(key string) (time.Duration, bool) {
	var last time.Time
	for _, until := range s.places(key) {
		if until.After(last) {
			last = until
		}
	}
	return max(time.Until(last), time.Millisecond), !last.IsZero()
}

func (s *naiveStore) acquirePlace(req store.Request) (store.Grant, error) {
	if req.Reentrant || req.Holders < 0 {
		return store.Grant{}, fmt.Errorf("%w: naive: a reentrant semaphore or negative holders", store.ErrInvalid)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.held(req.Key); l != nil {
		return store.Grant{Remaining: max(time.Until(l.until), time.Millisecond), Holders: 1}, nil
	}
	ps := s.places(req.Key)
	until, retry := ps[req.Token]
	if !retry && len(ps) >= req.Holders && s.bug != "holders-unbounded" {
		first := time.Time{}
		for _, u := range ps {
			if first.IsZero() || u.Before(first) {
				first = u
			}
		}
		return store.Grant{Remaining: max(time.Until(first), time.Millisecond), Holders: len(ps)}, nil
	}
	if !retry {
		if ps == nil {
			ps = map[string]time.Time{}
			s.sems[req.Key] = ps
		}
		until = time.Now().Add(req.TTL)
		ps[req.Token] = until
	}
	g := store.Grant{Acquired: true, TTL: time.Until(until), Holds: 1, Holders: len(ps)}
	if req.Fence {
		s.fences[req.Key]++
		g.Fence = s.fences[req.Key]
	}
	return g, nil
}

// releasePlace frees token's place of key, or extends it when ttl > 0
// (the caller holds s.mu).
func (s *naiveStore) releasePlace(key, token string, ttl time.Duration) store.Outcome {
	ps := s.places(key)
	if _, ok := ps[token]; !ok {
		return store.Gone
	}
	if ttl > 0 {
		ps[token] = time.Now().Add(ttl)
		return store.OK
	}
	delete(ps, token)
	s.places(key)
	s.notify(key)
	return store.OK
}

// notify wakes key's watchers (the caller holds s.mu).
func (s *naiveStore) notify(key string) {
	for _, ch := range s.waiters[key] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
