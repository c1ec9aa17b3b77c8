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
		locks += len(sh.locks.m)
		fences += len(sh.fences.m)
		watched += len(sh.waiters)
		sh.mu.Unlock()
	}
	return locks, fences, watched
}
