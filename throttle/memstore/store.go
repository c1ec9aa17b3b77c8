package memstore

import (
	"context"
	"fmt"
	"hash/maphash"
	"math"
	"runtime"
	"time"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

const (
	maxShards     = 64
	shardsPerProc = 4  // so that goroutines running at once rarely share a mutex
	minPerShard   = 16 // a small store has fewer shards, to keep its bound close

	defaultMaxKeys        = 1 << 20
	defaultMaxRecordBytes = 64 << 20
	defaultFenceTTL       = 24 * time.Hour
)

// Store is an in-memory store.Store, store.Notifier, store.Quota and
// store.Recorder for one process. Make one with New; it is safe for
// concurrent use.
type Store struct {
	shards   []shard
	seed     maphash.Seed
	clock    func() time.Time // nil for time.Now (see now)
	epoch    time.Time
	fenceTTL time.Duration
}

// errFull is the error of a new entry the bounds refuse: nothing was written.
var errFull = fmt.Errorf("memstore: %w", store.ErrFull)

var _ interface {
	storekit.InMemory
	store.Notifier
	store.Quota
	store.Recorder
} = (*Store)(nil)

// New returns an empty store. Without options it holds up to 1<<20 locks and
// reads time.Now.
func New(opts ...Option) *Store {
	c := config{maxKeys: defaultMaxKeys, maxRecordBytes: defaultMaxRecordBytes,
		fenceTTL: defaultFenceTTL}
	for _, o := range opts {
		o(&c)
	}
	n := shardCount(runtime.GOMAXPROCS(0))
	for n > 1 && c.maxKeys/n < minPerShard {
		n /= 2
	}
	s := &Store{shards: make([]shard, n), seed: maphash.MakeSeed(), clock: c.clock,
		epoch: time.Now(), fenceTTL: c.fenceTTL}
	if s.clock != nil {
		s.epoch = s.clock()
	}
	for i := range s.shards {
		s.shards[i].init(&c, n)
	}
	return s
}

// shardCount returns the shards of a large store on procs processors.
func shardCount(procs int) int {
	n := 1
	for n < shardsPerProc*procs && n < maxShards {
		n *= 2
	}
	return n
}

func (s *Store) shard(key string) *shard { sh, _ := s.locate(key); return sh }

// locate returns the shard of key and the key's tag in its locks.
func (s *Store) locate(key string) (*shard, uint32) {
	h := maphash.String(s.seed, key)
	return &s.shards[h&uint64(len(s.shards)-1)], tagOf(h)
}

// now returns the time since the store was made and, when wall is set, the
// wall clock in microseconds (for fences) from the same reading.
func (s *Store) now(wall bool) (time.Duration, int64) {
	if s.clock == nil && !wall {
		return time.Since(s.epoch), 0
	}
	t := time.Now()
	if s.clock != nil {
		t = s.clock()
	}
	return t.Sub(s.epoch), t.UnixMicro()
}

// ceilMillis rounds d up to a whole millisecond as Redis rounds PX, capped
// so that an expiry cannot overflow.
func ceilMillis(d time.Duration) time.Duration {
	d = min(d, time.Duration(1<<62))
	return (d + time.Millisecond - 1) / time.Millisecond * time.Millisecond
}

// Acquire takes req.Key for req.Token if it is free, or re-enters it for its
// reentrant owner, or takes one of req.Holders places (see store.Store and
// acquireHolders); a new lock or holder that does not fit fails.
func (s *Store) Acquire(ctx context.Context, req store.Request) (store.Grant, error) {
	if err := ctx.Err(); err != nil {
		return store.Grant{}, err
	}
	if req.TTL <= 0 || req.Token == "" {
		return store.Grant{}, fmt.Errorf("%w: memstore: empty token or ttl %v not positive", store.ErrInvalid, req.TTL)
	}
	if uint(req.Holders) > 1 { // several holders, or a negative count to refuse
		return s.acquireHolders(req)
	}
	ttl := ceilMillis(req.TTL)
	now, wall := s.now(req.Fence)
	sh, tag := s.locate(req.Key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if l, i, held := sh.locks.get(req.Key, tag, now); held {
		return s.acquireHeld(sh, req, l, i, ttl, now, wall)
	}
	if len(sh.sems.m) > 0 {
		if g, held := sh.semHeld(req.Key, now); held {
			return g, nil
		}
	}
	pol := sh.pols.id(req.Key)
	if !sh.locks.room(pol, now) && !sh.sweepSems(pol, now) {
		return store.Grant{}, errFull
	}
	l := lock{token: req.Token, expires: now + ttl, pol: pol}
	if req.Reentrant {
		l.holds = 1
	}
	if req.Fence {
		l.fence = sh.nextFence(req.Key, now, wall, s.fenceTTL)
	}
	if !sh.locks.add(req.Key, tag, l, ttl) {
		return store.Grant{}, errFull
	}
	return store.Grant{Acquired: true, TTL: ttl, Holds: 1, Fence: l.fence}, nil
}

// acquireHeld answers for a key held by l: refused for another token or kind
// of hold, granted as it stands to a plain holder's retry, and re-entered,
// never shortened, for a reentrant owner.
func (s *Store) acquireHeld(sh *shard, req store.Request, l lock, i int, ttl, now time.Duration, wall int64) (store.Grant, error) {
	if l.token != req.Token || req.Reentrant != (l.holds > 0) {
		return store.Grant{Remaining: max(ceilMillis(l.expires-now), time.Millisecond)}, nil
	}
	if l.holds == math.MaxInt32 {
		return store.Grant{}, fmt.Errorf("%w: memstore: too many holds of one key", store.ErrInvalid)
	}
	if req.Reentrant {
		l.holds++
		l.expires = max(l.expires, now+ttl)
	}
	if req.Fence && (l.fence == 0 || !req.Reentrant) {
		l.fence = sh.nextFence(req.Key, now, wall, s.fenceTTL)
	}
	sh.locks.update(i, l, now) // nextFence leaves the locks alone
	g := store.Grant{Acquired: true, TTL: l.expires - now, Holds: max(int(l.holds), 1)}
	if req.Fence {
		g.Fence = l.fence
	}
	return g, nil
}

// Release frees key and its record if token holds it, or token's place of a
// key with several holders, and wakes its watchers (see store.Store).
func (s *Store) Release(ctx context.Context, key, token string) (store.Outcome, error) {
	return s.ifOwned(ctx, key, token, func(sh *shard, i int, l lock, now time.Duration) store.Outcome {
		if l.holds > 1 {
			l.holds--
			sh.locks.update(i, l, now)
			return store.StillHeld
		}
		sh.locks.release(i)
		if r, ok := sh.records.m[key]; ok {
			sh.records.drop(key, r)
		}
		sh.notify(key)
		return store.OK
	}, releaseHolder)
}

// Extend sets key's time to live to ttl if token holds it, or the time of
// token's place of a key with several holders (see store.Store).
func (s *Store) Extend(ctx context.Context, key, token string, ttl time.Duration) (store.Outcome, error) {
	if ttl <= 0 {
		return 0, fmt.Errorf("%w: memstore: ttl %v must be positive", store.ErrInvalid, ttl)
	}
	return s.ifOwned(ctx, key, token, func(sh *shard, i int, l lock, now time.Duration) store.Outcome {
		extended(sh, i, l, now, ttl)
		return store.OK
	}, extendHolder(ttl))
}

// extended sets the held lock l, at i in sh, to expire ttl after now (a
// reentrant lock's expiry is raised, never lowered), and returns it.
func extended(sh *shard, i int, l lock, now, ttl time.Duration) lock {
	if l.holds == 0 || now+ceilMillis(ttl) > l.expires {
		l.expires = now + ceilMillis(ttl)
	}
	sh.locks.update(i, l, now)
	return l
}

// ifOwned runs change under key's shard lock when token holds key, and
// otherwise reports store.Gone or store.HeldByOther, changing nothing. A
// key with several holders has holder run instead (see ifHolder).
func (s *Store) ifOwned(ctx context.Context, key, token string,
	change func(sh *shard, i int, l lock, now time.Duration) store.Outcome,
	holder func(sh *shard, key string, sm *semaphore, i int, now time.Duration) store.Outcome) (store.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	now, _ := s.now(false)
	sh, tag := s.locate(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	l, i, held := sh.locks.get(key, tag, now)
	switch {
	case !held:
		return sh.ifHolder(key, token, now, holder), nil
	case l.token != token:
		return store.HeldByOther, nil
	}
	return change(sh, i, l, now), nil
}

// Len returns how many entries (locks, fence counters, quotas, records,
// unremoved expired ones included) the store holds, for a memory gauge. It
// locks every shard in turn.
func (s *Store) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += int(sh.locks.used) + len(sh.fences.m) + len(sh.quotas.m) + len(sh.records.m)
		sh.mu.Unlock()
	}
	return n
}

// InMemory marks the store as answering without I/O, so that a limiter
// spends no per-call timeout on it.
func (s *Store) InMemory() {}
