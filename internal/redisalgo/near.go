package redisalgo

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-throttle/throttle/internal/nearcache"
	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

// NearCacheStats returns the near cache's counts.
func (s *Store) NearCacheStats() storekit.NearStats {
	n := &s.near
	if n.cache == nil {
		return storekit.NearStats{}
	}
	st := n.cache.Stats()
	return storekit.NearStats{On: !n.off.Load(), Hits: st.Hits, Invalidations: st.Invalidations, Entries: st.Entries}
}

// near is the store's memory of refusals, kept while a tracking connection
// to each master reports every change of the keys under the prefixes it
// learnt (a key's text up to its first '{': the limiter's keys are
// prefix:{...}).
type near struct {
	cache   *nearcache.Cache // nil: off
	tr      Tracker
	off     atomic.Bool                     // the server refused tracking
	tracked atomic.Pointer[map[string]bool] // prefixes of the live connections

	mu      sync.Mutex
	wanted  map[string]bool
	running bool
	topo    uint64        // bumped by Moved
	kick    chan struct{} // a prefix was added, or the topology moved
}

// nearDefault is the near cache's default bound, a few MB at most.
const nearDefault = 16384

func (n *near) init(s *Store) {
	tr, ok := s.conn.(Tracker)
	if !ok || s.cfg.near <= 0 || s.cfg.now != nil || s.cfg.replicas > 0 {
		return
	}
	n.cache, n.tr, n.wanted, n.kick = nearcache.New(s.cfg.near, nil), tr, map[string]bool{}, make(chan struct{}, 1)
	n.tracked.Store(&map[string]bool{})
}

// nearStamp is what a call takes before sending a command whose refusal
// it may keep.
type nearStamp struct {
	gen  uint64
	ok   bool
	sent time.Time
}

// stamp returns key's stamp, none when key's prefix is not tracked.
func (s *Store) stamp(key string) nearStamp {
	n := &s.near
	if n.cache == nil {
		return nearStamp{}
	}
	if p, ok := prefix(key); !ok || !(*n.tracked.Load())[p] {
		return nearStamp{}
	}
	gen, ok := n.cache.Stamp(key)
	return nearStamp{gen: gen, ok: ok, sent: n.cache.Now()}
}

// prefix returns what a tracking connection tracks for key: its text up to
// its first '{' (prefixes so cut never overlap, which Redis refuses).
func prefix(key string) (string, bool) {
	i := strings.IndexByte(key, '{')
	return key[:i+1], i >= 0
}

// keep remembers a refusal of key until st.sent+d (the time counted from
// before the command, so that the entry ends no later than the refusal):
// a quota's under rate r, a lock's with its holder, which the store would
// admit (a lock refused without reading its holder is not kept). A refusal
// of a key whose prefix is not tracked yet asks for it.
func (s *Store) keep(key string, st nearStamp, d time.Duration, r store.Rate, holder string) {
	s.wantPrefix(key, st)
	if !st.ok || d <= 0 || r.Burst == 0 && holder == "" {
		return
	}
	// Less a millisecond: Redis counts whole ones, rounding its clock down.
	e := nearcache.Entry{Until: st.sent.Add(d - time.Millisecond), Burst: r.Burst, Holder: holder}
	if r.Burst > 0 {
		e.Interval = storekit.Interval(r)
	}
	s.near.cache.Put(key, e, st.gen)
}

// wantPrefix asks for the prefix of key to be tracked when st was taken before
// it was.
func (s *Store) wantPrefix(key string, st nearStamp) {
	n := &s.near
	if p, ok := prefix(key); ok && !st.ok && n.cache != nil && !n.off.Load() && !(*n.tracked.Load())[p] {
		s.want(p)
	}
}

// keepStrict remembers the refusal d of a charge of cost under the strict
// rate r: its Remaining holds until the oldest admission holding it down
// leaves the Window (d.RefillAfter). Anything sooner (another charge, a
// refund, a Reset) writes the key, which Redis reports.
func (s *Store) keepStrict(key string, st nearStamp, d store.Decision, r store.Rate, cost int) {
	s.wantPrefix(key, st)
	if !st.ok || d.RefillAfter <= 0 {
		return
	}
	// Less a millisecond, as keep's: the entry ends no later than the refusal.
	at := func(d time.Duration) time.Time { return st.sent.Add(d - time.Millisecond) }
	s.near.cache.Put(key, nearcache.Entry{Until: at(d.RefillAfter), Strict: &nearcache.Strict{
		Window: r.Window, Limit: r.Limit, Cost: cost, Remaining: d.Remaining,
		Retry: at(d.RetryAfter), Reset: at(d.ResetAfter)}}, st.gen)
}

// Forget drops key's refusal after this process changed key (a release, a
// refund), before Redis's invalidation arrives: a refusal sent before the
// change and kept after this returns would refuse this process's next
// acquisition. Most releases find no entry, so the cache's Forget takes
// no write lock then; it still bumps the generation, so such a racing
// refusal is never kept (Redis's invalidation of the change, which the
// tracking connections report for every client's writes, would drop it
// too, but only once it arrives).
func (s *Store) Forget(key string) {
	if s.near.cache != nil {
		s.near.cache.Forget(key)
	}
}

// Refused returns the refusal of req that the near cache remembers, if
// any (storekit.Near): a plain or fenced request of a token other than the
// holder's, answered without a call.
func (s *Store) Refused(req store.Request) (store.Grant, bool) {
	c, key := s.near.cache, req.Key
	if c == nil || semaphore(req) || req.Reentrant {
		return store.Grant{}, false
	}
	e, now, ok := c.Get(key)
	if !ok || e.Interval != 0 || e.Holder == req.Token {
		return store.Grant{}, false
	}
	c.Hit()
	return store.Grant{Remaining: duration(millis(e.Until.Sub(now)))}, true
}

// Spent returns the refusal of a charge of cost under r on key that the
// near cache remembers, if any (storekit.Near): only an entry decided under
// r answers, and only when it refuses.
func (s *Store) Spent(key string, r store.Rate, cost int) (store.Decision, bool) {
	c := s.near.cache
	if c == nil || cost <= 0 || cost > r.Burst {
		return store.Decision{}, false
	}
	e, now, ok := c.Get(key)
	if r.Strict {
		return spentStrict(c, e, ok, now, r, cost)
	}
	t := storekit.Interval(r)
	if !ok || e.Interval != t || e.Burst != r.Burst || e.Strict != nil {
		return store.Decision{}, false
	}
	unit := time.Microsecond // the store's, as in its replies
	if t%time.Millisecond == 0 {
		unit = time.Millisecond
	}
	reset := e.Until.Sub(now).Truncate(unit)
	tau := t * time.Duration(r.Burst)
	if reset+time.Duration(cost)*t <= tau {
		return store.Decision{}, false // the store may allow it
	}
	c.Hit()
	return store.Decision{Remaining: int(max(tau-reset, 0) / t), ResetAfter: reset,
		RetryAfter: reset + time.Duration(cost)*t - tau}, true
}

// spentStrict is Spent of the strict rate r, from the entry e of key at
// now: the charge refused, of the same cost, under the same rate.
func spentStrict(c *nearcache.Cache, e nearcache.Entry, ok bool, now time.Time, r store.Rate, cost int) (store.Decision, bool) {
	x := e.Strict
	if !ok || x == nil || x.Window != r.Window || x.Limit != r.Limit || x.Cost != cost {
		return store.Decision{}, false
	}
	c.Hit()
	left := func(t time.Time) time.Duration { return max(t.Sub(now), 0).Truncate(time.Microsecond) }
	return store.Decision{Remaining: x.Remaining, RefillAfter: left(e.Until), RetryAfter: left(x.Retry),
		ResetAfter: left(x.Reset)}, true
}

// want asks for prefix p to be tracked, starting the tracking goroutine.
func (s *Store) want(p string) {
	n := &s.near
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.wanted[p] {
		return
	}
	n.wanted[p] = true
	n.poke()
	if !n.running {
		w := &s.watch
		w.mu.Lock()
		n.running = w.spawn(s.track)
		w.mu.Unlock()
	}
}
