package memstore

import (
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeClock is a clock that moves only when told to.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// counts returns the number of locks, fence counters and watched keys of
// every shard, expired ones included.
func (s *Store) counts() (locks, fences, watched int) {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		locks += int(sh.locks.used)
		fences += len(sh.fences.m)
		watched += len(sh.waiters)
		sh.mu.Unlock()
	}
	return locks, fences, watched
}

// all returns the live entries of the rings, by key.
func (t *locks) all() map[string]lock {
	m := map[string]lock{}
	for k := range t.rings {
		g := &t.rings[k]
		for seq := g.head; seq != g.tail; seq++ {
			if e := g.at(seq); e.key != "" {
				m[e.key] = e.l
			}
		}
	}
	return m
}
