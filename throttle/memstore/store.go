package memstore

import (
	"context"
	"fmt"
	"hash/maphash"
	"math"
	"runtime"
	"time"

	"github.com/go-throttle/throttle/throttle/store"
)

// maxShards is the most shards a store has: enough that goroutines on
// different keys rarely share a mutex on machines with dozens of cores.
const maxShards = 64

// shardsPerProc is how many shards a store has per processor that runs Go
// code (GOMAXPROCS) when New is called, up to maxShards: enough that the
// goroutines running at once rarely share a mutex, and no more, because
// every shard has parts that each acquisition of a new key touches (its
// mutex, the heads and tails of its rings: see ring.go), and the fewer
// shards, the likelier these are still in the CPU's cache (the heads and
// tails are read and written in order, which the CPU's prefetcher follows
// for a few streams, not for a hundred). Under a stream of new keys on one
// processor, 4 shards took 15–20% less time per acquisition than 64 did.
// The price is contention where goroutines do nothing but call the store:
// two of them acquiring and releasing on 2 processors took 109 ns per pair
// with 8 shards against 85 ns with 64; a server spends most of a request
// elsewhere, and rarely meets another request in its shard.
const shardsPerProc = 4

// minPerShard is the least capacity per shard; a small store (WithMaxKeys) has
// fewer shards so that its bound stays close to what was asked.
const minPerShard = 16

// Store is an in-memory throttle.Store and store.Notifier for one process.
// It is safe for concurrent use; the zero value is not usable, call New.
type Store struct {
	shards   []shard
	mask     uint64
	seed     maphash.Seed
	clock    func() time.Time // nil for time.Now (see now)
	epoch    time.Time
	fenceTTL time.Duration
}

var (
	_ store.Store    = (*Store)(nil)
	_ store.Notifier = (*Store)(nil)
)

// New returns an empty store. Without options it holds up to DefaultMaxKeys
// locks (DefaultPolicyShare of them for one policy), reads time.Now and keeps
// fence counters for DefaultFenceTTL.
func New(opts ...Option) *Store {
	c := config{maxKeys: DefaultMaxKeys, maxRecordBytes: DefaultMaxRecordBytes, fenceTTL: DefaultFenceTTL,
		policyShare: DefaultPolicyShare}
	for _, o := range opts {
		o(&c)
	}
	n := shardCount(runtime.GOMAXPROCS(0))
	for n > 1 && c.maxKeys/n < minPerShard {
		n /= 2
	}
	s := &Store{
		shards:   make([]shard, n),
		mask:     uint64(n - 1),
		seed:     maphash.MakeSeed(),
		fenceTTL: c.fenceTTL,
	}
	s.epoch = time.Now()
	if c.clock != nil {
		s.clock = c.clock
		s.epoch = s.clock()
	}
	per := (c.maxKeys + n - 1) / n
	perRecord := (c.maxRecordBytes + int64(n) - 1) / int64(n)
	for i := range s.shards {
		s.shards[i].init(s.seed, per, perRecord, c.policyShare)
	}
	return s
}

// shardCount returns the number of shards of a large store on procs
// processors: shardsPerProc each, rounded up to a power of two, at most
// maxShards.
func shardCount(procs int) int {
	n := 1
	for n < shardsPerProc*procs && n < maxShards {
		n *= 2
	}
	return n
}

// shard returns the shard of key.
func (s *Store) shard(key string) *shard {
	sh, _ := s.locate(key)
	return sh
}

// locate returns the shard of key and the key's tag in the shard's lock
// table, from one hash of the key.
func (s *Store) locate(key string) (*shard, uint32) {
	h := maphash.String(s.seed, key)
	return &s.shards[h&s.mask], tagOf(h)
}

// now returns the time since the store was made, for expiries, and, when
// wall is set, the wall clock in microseconds, for fences, from one clock
// reading (0 otherwise). With the default clock an expiry needs only the
// monotonic clock, which time.Since reads without the wall clock (about
// half the cost of time.Now); only fenced acquisitions read both.
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

// maxTTL caps TTLs (at about 146 years) so that an expiry time cannot
// overflow.
const maxTTL = time.Duration(1 << 62)

// ceilMillis rounds d up to a whole millisecond, as Redis rounds PX and
// PTTL, so that both stores report the same Remaining.
func ceilMillis(d time.Duration) time.Duration {
	d = min(d, maxTTL)
	return (d + time.Millisecond - 1) / time.Millisecond * time.Millisecond
}

func checkTTL(ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("%w: memstore: ttl %v must be positive", store.ErrInvalid, ttl)
	}
	return nil
}

// Acquire takes req.Key for req.Token if it is free (or, for a Reentrant
// request, already held by req.Token as a reentrant lock). It fails with
// ErrFull when a new lock does not fit: the shard is full, or the key's
// policy holds its share of it (see WithMaxKeys and WithPolicyShare); with an error
// matching store.ErrInvalid for an empty token or a TTL that is not
// positive, and with ctx.Err() when ctx is done.
func (s *Store) Acquire(ctx context.Context, req store.Request) (store.Grant, error) {
	if err := ctx.Err(); err != nil {
		return store.Grant{}, err
	}
	if err := checkTTL(req.TTL); err != nil {
		return store.Grant{}, err
	}
	if req.Token == "" {
		return store.Grant{}, fmt.Errorf("%w: memstore: empty token", store.ErrInvalid)
	}
	ttl := ceilMillis(req.TTL)
	now, wall := s.now(req.Fence)
	sh, tag := s.locate(req.Key)
	sh.mu.Lock()
	defer sh.mu.Unlock()

	if l, i, held := sh.live(req.Key, tag, now); held {
		if l.token != req.Token || (req.Reentrant != (l.holds > 0)) {
			return store.Grant{Remaining: max(ceilMillis(l.expires-now), time.Millisecond)}, nil
		}
		if !req.Reentrant {
			// Our own token: a retry of an acquisition whose answer was
			// lost. The key is ours as it stands.
			g := store.Grant{Acquired: true, TTL: l.expires - now, Holds: 1}
			if req.Fence {
				f := sh.nextFence(req.Key, now, wall, s.fenceTTL)
				l.fence, g.Fence = f, f
				sh.locks.at(i).l = l // nextFence leaves the index alone
			}
			return g, nil
		}
		if l.holds == math.MaxInt32 {
			return store.Grant{}, fmt.Errorf("%w: memstore: too many holds of one key", store.ErrInvalid)
		}
		if req.Fence && l.fence == 0 {
			l.fence = sh.nextFence(req.Key, now, wall, s.fenceTTL)
		}
		l.holds++
		if now+ttl > l.expires { // a re-entry never shortens the hold
			l.expires = now + ttl
			sh.setExpiry(req.Key, tag, l, now)
		} else {
			sh.locks.at(i).l = l
		}
		g := store.Grant{Acquired: true, TTL: l.expires - now, Holds: int(l.holds)}
		if req.Fence {
			g.Fence = l.fence
		}
		return g, nil
	}

	pol := sh.pols.id(req.Key)
	if !sh.roomForLock(pol, now) {
		return store.Grant{}, ErrFull
	}
	l := lock{token: req.Token, expires: now + ttl, pol: pol}
	if req.Reentrant {
		l.holds = 1
	}
	if req.Fence {
		l.fence = sh.nextFence(req.Key, now, wall, s.fenceTTL)
	}
	if !sh.add(req.Key, tag, l, ttl) {
		return store.Grant{}, ErrFull
	}
	return store.Grant{Acquired: true, TTL: ttl, Holds: 1, Fence: l.fence}, nil
}

// Release frees key if token holds it, or drops one hold of a reentrant lock
// held more than once (store.StillHeld). Freeing the key also deletes its
// record (see Record). Waiters from Watch are woken when the key is freed.
// It returns ctx.Err() when ctx is done.
func (s *Store) Release(ctx context.Context, key, token string) (store.Outcome, error) {
	return s.ifOwned(ctx, key, token, func(sh *shard, _ uint32, i int, l lock, _ time.Duration) store.Outcome {
		if l.holds > 1 {
			l.holds--
			sh.locks.at(i).l = l
			return store.StillHeld
		}
		sh.locks.remove(i)
		if r, ok := sh.recordOf(key); ok {
			sh.dropRecord(key, r)
		}
		sh.notify(key)
		return store.OK
	})
}

// Extend sets the time to live of key to ttl (rounded up to a millisecond) if
// token holds it; a reentrant key's is raised, never lowered. It fails
// with an error matching store.ErrInvalid when ttl is not positive and with
// ctx.Err() when ctx is done.
func (s *Store) Extend(ctx context.Context, key, token string, ttl time.Duration) (store.Outcome, error) {
	if err := checkTTL(ttl); err != nil {
		return 0, err
	}
	return s.ifOwned(ctx, key, token, func(sh *shard, tag uint32, _ int, l lock, now time.Duration) store.Outcome {
		expires := now + ceilMillis(ttl)
		if l.holds > 0 {
			// One owner's holds share a reentrant key's TTL: never lower it.
			expires = max(expires, l.expires)
		}
		if expires != l.expires {
			l.expires = expires
			sh.setExpiry(key, tag, l, now)
		}
		return store.OK
	})
}

// ifOwned is the token check Release and Extend share: under key's shard
// lock, it runs change with key's lock and index slot (see shard.live) when
// token holds key, and otherwise reports store.Gone or store.HeldByOther
// without changing anything.
func (s *Store) ifOwned(ctx context.Context, key, token string,
	change func(sh *shard, tag uint32, i int, l lock, now time.Duration) store.Outcome) (store.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	now, _ := s.now(false)
	sh, tag := s.locate(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	l, i, held := sh.live(key, tag, now)
	switch {
	case !held:
		return store.Gone, nil
	case l.token != token:
		return store.HeldByOther, nil
	}
	return change(sh, tag, i, l, now), nil
}

// Len returns how many keys the store holds now (locks, fencing counters,
// quotas and records), expired ones not yet removed included: what its memory
// grows with, for a gauge such as promthrottle's throttle_memstore_keys.
// It locks each shard in turn: call it at scrape time, not per request.
func (s *Store) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += sh.locks.n + len(sh.fences) + len(sh.quotas) + len(sh.records)
		sh.mu.Unlock()
	}
	return n
}

// InMemory marks the store as answering without I/O (store.InMemory), so
// that a Limiter spends no per-call timeout on it.
func (s *Store) InMemory() {}
