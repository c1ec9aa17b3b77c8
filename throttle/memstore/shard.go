package memstore

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

// lock is one held key. Its token is the caller's, kept without copying.
type lock struct {
	token   string
	expires time.Duration // since Store.epoch
	fence   int64         // fence of the hold, 0 if none was asked
	holds   int32         // hold count of a reentrant lock, 0 for a plain lock
	pol     uint16
}

// counter is a key's fence counter; counters are not counted per policy.
type counter struct {
	last    int64
	expires time.Duration
}

func (c counter) expiry() time.Duration { return c.expires }
func (c counter) policy() uint16        { return 0 }
func (c counter) size() int64           { return 1 }

type shard struct {
	mu      sync.Mutex
	locks   locks
	sems    semaphores // keys with several holders, beside the locks they exclude
	fences  table[counter]
	quotas  table[quota]
	logs    table[strictLog] // strict rates' keys
	records table[record]
	waiters map[string][]chan struct{}
	pols    policies
	tick    uint32 // counts quota decisions, to order them by last use (wraps)
	// fenceBase is the highest fence of the counters removed: new ones
	// start above it, so that a key's fences only increase.
	fenceBase int64
}

func (sh *shard) init(c *config, n int) {
	per := int64((c.maxKeys + n - 1) / n)
	sh.locks = locks{bounds: newBounds(per), onDrop: sh.lockDropped}
	sh.locks.grow()
	sh.fences = newTable[counter](per)
	sh.fences.onDrop = func(_ string, c counter) { sh.fenceBase = max(sh.fenceBase, c.last) }
	sh.quotas = newTable[quota](per)
	sh.logs = newTable[strictLog](per)
	sh.records = newTable[record]((c.maxRecordBytes + int64(n) - 1) / int64(n))
	sh.waiters = map[string][]chan struct{}{}
	sh.pols = policies{ids: map[string]uint16{}}
}

// lockDropped removes the record of key, whose lock l expired, when the
// record expired too (unless an Extend shortened the lock after it).
func (sh *shard) lockDropped(key string, l lock) {
	if r, ok := sh.records.m[key]; ok && r.expires <= l.expires {
		sh.records.drop(key, r)
	}
}

// nextFence returns key's next fence, max(last+1, wall), and keeps the
// counter for ttl; a full shard drops the oldest of a few counters for it.
func (sh *shard) nextFence(key string, now time.Duration, wall int64, ttl time.Duration) int64 {
	c, ok := sh.fences.get(key, now)
	if !ok && !sh.fences.room(0, 1, now) {
		victim, v, n := "", counter{expires: math.MaxInt64}, 0
		for k, o := range sh.fences.m {
			if o.expires <= v.expires {
				victim, v = k, o
			}
			if n++; n == sampleSize {
				break
			}
		}
		sh.fences.drop(victim, v) // raises fenceBase
	}
	if !ok {
		c.last = sh.fenceBase
	}
	c.last = max(c.last+1, wall)
	c.expires = now + ttl
	sh.fences.put(key, c, !ok)
	return c.last
}

// Watch returns a channel told when key is released or recorded, and a stop
// function (see store.Notifier). Expiry does not signal: the limiter's
// backoff finds an expired key.
func (s *Store) Watch(ctx context.Context, key string) (<-chan struct{}, func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	ch := make(chan struct{}, 1)
	sh := s.shard(key)
	sh.mu.Lock()
	sh.waiters[key] = append(sh.waiters[key], ch)
	sh.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			sh.mu.Lock()
			defer sh.mu.Unlock()
			ws := slices.DeleteFunc(sh.waiters[key], func(c chan struct{}) bool { return c == ch })
			if len(ws) == 0 {
				delete(sh.waiters, key)
			} else {
				sh.waiters[key] = ws
			}
		})
	}, nil
}

// notify wakes key's waiters; one whose channel is full has not looked yet.
func (sh *shard) notify(key string) {
	for _, ch := range sh.waiters[key] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// maxPolicies is how many policies a shard tells apart; further ones count
// as "", so that keys of another shape cannot grow a table per key.
const maxPolicies = 1 << 10

// policies gives the policies of a shard's keys small ids (0 is ""),
// remembering the last, as keys in a row are mostly of one policy.
type policies struct {
	ids    map[string]uint16
	last   string
	lastID uint16
}

func (p *policies) id(key string) uint16 {
	name := policyOf(key)
	if name == p.last {
		return p.lastID
	}
	id, ok := p.ids[name]
	if !ok && name != "" && len(p.ids) < maxPolicies-1 {
		id, name = uint16(len(p.ids)+1), strings.Clone(name) // not the whole key kept alive
		p.ids[name] = id
	}
	p.last, p.lastID = name, id
	return id
}

// policyOf returns the policy in key's hash tag, between the first '{' and
// the next ':' (storekit.Key escapes both), or "" when key has no such tag.
func policyOf(key string) string {
	_, rest, ok := strings.Cut(key, "{")
	name, _, found := strings.Cut(rest, ":")
	if !ok || !found || strings.Contains(name, "}") {
		return ""
	}
	return name
}
