package memstore

import (
	"time"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

// holder is one token holding a place of a semaphore, until expires.
type holder struct {
	token   string
	expires time.Duration // since Store.epoch
}

// semaphore is a key that several tokens hold at once (Request.Holders).
// Its holders are few and unordered; each counts as one lock against the
// shard's bounds.
type semaphore struct {
	holders []holder
	pol     uint16
}

// semaphores are a shard's keys with holders. A plain lock and a semaphore
// never share a key: whichever holds it first refuses the other kind.
type semaphores struct {
	m    map[string]*semaphore // a key is here only while it has holders
	news uint8                 // new holders since the last sample, mod sampleEvery
}

// find returns the index of token among sm's holders, or -1.
func (sm *semaphore) find(token string) int {
	for i := range sm.holders {
		if sm.holders[i].token == token {
			return i
		}
	}
	return -1
}

// expiries returns the earliest and the latest expiry of sm's holders.
func (sm *semaphore) expiries() (first, last time.Duration) {
	first, last = sm.holders[0].expires, sm.holders[0].expires
	for _, h := range sm.holders[1:] {
		first, last = min(first, h.expires), max(last, h.expires)
	}
	return first, last
}

// prune drops the holders of sm, key's semaphore, whose time ended at now,
// and sm itself once it has none; it reports whether sm is left.
func (sh *shard) prune(key string, sm *semaphore, now time.Duration) bool {
	live := sm.holders[:0]
	for _, h := range sm.holders {
		if h.expires > now {
			live = append(live, h)
		}
	}
	if gone := len(sm.holders) - len(live); gone > 0 {
		clear(sm.holders[len(live):]) // keeps no token alive
		sm.holders = live
		sh.locks.count(sm.pol, -int64(gone))
	}
	if len(live) == 0 {
		delete(sh.sems.m, key)
		return false
	}
	return true
}

// semaphore returns key's semaphore with its live holders, or nil.
func (sh *shard) semaphore(key string, now time.Duration) *semaphore {
	if sm := sh.sems.m[key]; sm != nil && sh.prune(key, sm, now) {
		return sm
	}
	return nil
}

// semHeld reports, for a plain acquisition of key, whether holders of a
// semaphore hold it, and for how long the last of them does.
func (sh *shard) semHeld(key string, now time.Duration) (store.Grant, bool) {
	sm := sh.semaphore(key, now)
	if sm == nil {
		return store.Grant{}, false
	}
	_, last := sm.expiries()
	return store.Grant{Remaining: max(ceilMillis(last-now), time.Millisecond)}, true
}

// sweepSems prunes every semaphore of the shard, for a new entry that did
// not fit, and reports whether one of policy p fits now.
func (sh *shard) sweepSems(p uint16, now time.Duration) bool {
	for key, sm := range sh.sems.m {
		sh.prune(key, sm, now)
	}
	return sh.locks.fits(p, 1)
}

// holderRoom reports whether a new holder of policy p fits. Every
// sampleEvery-th new holder prunes a few semaphores on its way in.
func (sh *shard) holderRoom(p uint16, now time.Duration) bool {
	if sh.sems.news = (sh.sems.news + 1) % sampleEvery; sh.sems.news == 0 {
		n := 0
		for key, sm := range sh.sems.m {
			if n++; n > sampleEvery*sampleSize {
				break
			}
			sh.prune(key, sm, now)
		}
	}
	return sh.locks.room(p, now) || sh.sweepSems(p, now)
}

// acquireHolders answers a request with Holders above 1 (a semaphore; see
// store.Request): a token already among the holders is granted as it
// stands, a new one takes a place if one is free, and otherwise learns when
// the earliest holder's time ends. A plain lock on the key refuses it.
func (s *Store) acquireHolders(req store.Request) (store.Grant, error) {
	if err := storekit.CheckHolders("memstore", req); err != nil {
		return store.Grant{}, err
	}
	ttl := ceilMillis(req.TTL)
	now, wall := s.now(req.Fence)
	sh, tag := s.locate(req.Key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if l, _, held := sh.locks.get(req.Key, tag, now); held {
		return store.Grant{Remaining: max(ceilMillis(l.expires-now), time.Millisecond), Holders: 1}, nil
	}
	sm := sh.semaphore(req.Key, now)
	if sm == nil {
		sm = &semaphore{pol: sh.pols.id(req.Key)}
	}
	if i := sm.find(req.Token); i >= 0 { // a retry whose reply was lost
		return s.holderGrant(sh, req, sm, sm.holders[i].expires-now, now, wall), nil
	}
	if len(sm.holders) >= req.Holders {
		first, _ := sm.expiries()
		return store.Grant{Remaining: max(ceilMillis(first-now), time.Millisecond), Holders: len(sm.holders)}, nil
	}
	if !sh.holderRoom(sm.pol, now) {
		return store.Grant{}, errFull
	}
	if sh.sems.m == nil {
		sh.sems.m = map[string]*semaphore{}
	}
	sm.holders = append(sm.holders, holder{token: req.Token, expires: now + ttl})
	sh.sems.m[req.Key] = sm
	sh.locks.count(sm.pol, 1)
	return s.holderGrant(sh, req, sm, ttl, now, wall), nil
}

// holderGrant is the grant of a place of sm that the token keeps for ttl,
// with a new fence when asked for.
func (s *Store) holderGrant(sh *shard, req store.Request, sm *semaphore, ttl, now time.Duration, wall int64) store.Grant {
	g := store.Grant{Acquired: true, TTL: ttl, Holds: 1, Holders: len(sm.holders)}
	if req.Fence {
		g.Fence = sh.nextFence(req.Key, now, wall, s.fenceTTL)
	}
	return g
}

// ifHolder runs change on token's place among the holders of key when key
// is a semaphore, for a Release or an Extend: Gone when token holds no
// place. A Record (change nil) is refused as HeldByOther: semaphores keep
// no records.
func (sh *shard) ifHolder(key, token string, now time.Duration,
	change func(sh *shard, key string, sm *semaphore, i int, now time.Duration) store.Outcome) store.Outcome {
	if len(sh.sems.m) == 0 {
		return store.Gone
	}
	sm := sh.semaphore(key, now)
	switch {
	case sm == nil:
		return store.Gone
	case change == nil:
		return store.HeldByOther
	}
	i := sm.find(token)
	if i < 0 {
		return store.Gone
	}
	return change(sh, key, sm, i, now)
}

// releaseHolder frees the place of sm's holder i and wakes key's watchers.
func releaseHolder(sh *shard, key string, sm *semaphore, i int, _ time.Duration) store.Outcome {
	last := len(sm.holders) - 1
	sm.holders[i] = sm.holders[last]
	sm.holders[last] = holder{}
	sm.holders = sm.holders[:last]
	sh.locks.count(sm.pol, -1)
	if last == 0 {
		delete(sh.sems.m, key)
	}
	sh.notify(key)
	return store.OK
}

// extendHolder returns the Extend of a holder's place to ttl from now.
func extendHolder(ttl time.Duration) func(*shard, string, *semaphore, int, time.Duration) store.Outcome {
	return func(_ *shard, _ string, sm *semaphore, i int, now time.Duration) store.Outcome {
		sm.holders[i].expires = now + ceilMillis(ttl)
		return store.OK
	}
}
