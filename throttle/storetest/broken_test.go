package storetest_test

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle/store"
	"github.com/go-throttle/throttle/throttle/storetest"
)

// naiveStore is a small map store, written independently of memstore, with
// switchable bugs: it shows that the suite passes a correct store it has
// never seen and fails each classic mistake.
type naiveStore struct {
	bug     string
	mu      sync.Mutex
	locks   map[string]*naiveLock
	fences  map[string]int64
	waiters map[string][]chan struct{}
	sems    map[string]map[string]time.Time // see places
}

type naiveLock struct {
	token     string
	until     time.Time
	holds     int
	fence     int64
	reentrant bool
}

func newNaive(bug string) *naiveStore {
	return &naiveStore{bug: bug, locks: map[string]*naiveLock{}, fences: map[string]int64{}, waiters: map[string][]chan struct{}{},
		sems: map[string]map[string]time.Time{}}
}

func (s *naiveStore) held(key string) *naiveLock {
	l := s.locks[key]
	if l != nil && time.Now().After(l.until) && s.bug != "no-expiry" {
		delete(s.locks, key)
		return nil
	}
	return l
}

func (s *naiveStore) Acquire(ctx context.Context, req store.Request) (store.Grant, error) {
	if err := ctx.Err(); err != nil && s.bug != "ignores-context" {
		return store.Grant{}, err
	}
	if req.Holders > 1 || req.Holders < 0 {
		return s.acquirePlace(req)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if rem, ok := s.semHeld(req.Key); ok {
		return store.Grant{Remaining: rem}, nil
	}
	if l := s.held(req.Key); l != nil {
		if req.Reentrant && l.reentrant && l.token == req.Token && s.bug != "no-reentry" {
			l.holds++
			if until := time.Now().Add(req.TTL); until.After(l.until) || s.bug == "reentry-shortens" {
				l.until = until
			}
			g := store.Grant{Acquired: true, Holds: l.holds, TTL: time.Until(l.until)}
			if req.Fence {
				if l.fence == 0 {
					s.fences[req.Key]++
					l.fence = s.fences[req.Key]
				}
				g.Fence = l.fence
			}
			return g, nil
		}
		if !req.Reentrant && !l.reentrant && l.token == req.Token && s.bug != "retry-contended" {
			g := store.Grant{Acquired: true, Holds: 1, TTL: time.Until(l.until)}
			if req.Fence {
				s.fences[req.Key]++
				l.fence = s.fences[req.Key]
				g.Fence = l.fence
			}
			return g, nil
		}
		return store.Grant{Remaining: max(time.Until(l.until), time.Millisecond)}, nil
	}
	if s.bug == "check-then-set" {
		// The SETNX-then-EXPIRE family of mistakes: the check and the
		// write are two steps, and others run in between.
		s.mu.Unlock()
		runtime.Gosched()
		time.Sleep(time.Millisecond)
		s.mu.Lock()
	}
	l := &naiveLock{token: req.Token, until: time.Now().Add(req.TTL), holds: 1, reentrant: req.Reentrant}
	if req.Fence {
		s.fences[req.Key]++
		l.fence = s.fences[req.Key]
		if s.bug == "static-fence" {
			l.fence = 1
		}
	}
	s.locks[req.Key] = l
	return store.Grant{Acquired: true, Holds: 1, Fence: l.fence, TTL: req.TTL}, nil
}

func (s *naiveStore) Release(ctx context.Context, key, token string) (store.Outcome, error) {
	if err := ctx.Err(); err != nil && s.bug != "ignores-context" {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.held(key)
	switch {
	case l == nil:
		return s.releasePlace(key, token, 0), nil
	case l.token != token && s.bug != "unchecked-release":
		return store.HeldByOther, nil
	case l.holds > 1:
		l.holds--
		return store.StillHeld, nil
	}
	delete(s.locks, key)
	if s.bug != "no-notify" {
		s.wake(key)
	}
	return store.OK, nil
}

// wake tells key's waiters to look again.
func (s *naiveStore) wake(key string) {
	for _, ch := range s.waiters[key] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (s *naiveStore) Extend(ctx context.Context, key, token string, ttl time.Duration) (store.Outcome, error) {
	if err := ctx.Err(); err != nil && s.bug != "ignores-context" {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.held(key)
	switch {
	case l == nil:
		return s.releasePlace(key, token, ttl), nil
	case l.token != token && s.bug != "unchecked-extend":
		return store.HeldByOther, nil
	}
	if until := time.Now().Add(ttl); !l.reentrant || until.After(l.until) {
		l.until = until
	}
	return store.OK, nil
}

func (s *naiveStore) Watch(ctx context.Context, key string) (<-chan struct{}, func(), error) {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	s.waiters[key] = append(s.waiters[key], ch)
	s.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			ws := s.waiters[key]
			for i, c := range ws {
				if c == ch {
					s.waiters[key] = append(ws[:i], ws[i+1:]...)
					break
				}
			}
		})
	}, nil
}

// bugEnv names the bug TestNaiveStore runs with in a child process.
const bugEnv = "STORETEST_NAIVE_BUG"

// TestNaiveStore runs the suite against the naive store: as an ordinary test
// with no bug (it must pass), and in the child processes of
// TestSuiteCatchesBugs with one.
func TestNaiveStore(t *testing.T) {
	bug := os.Getenv(bugEnv)
	storetest.Run(t, func(t *testing.T) store.Store { return newNaive(bug) })
}

// TestSuiteCatchesBugs runs the suite against the naive store with each bug
// in a child process and checks that it fails, in the subtest that covers
// the bug.
func TestSuiteCatchesBugs(t *testing.T) {
	if os.Getenv(bugEnv) != "" {
		t.Skip("in a child process")
	}
	if testing.Short() {
		t.Skip("runs the test binary once per bug")
	}
	for bug, subtest := range map[string]string{
		"unchecked-release":   "token-safety",
		"unchecked-extend":    "token-safety",
		"no-expiry":           "token-safety",
		"check-then-set":      "contention",
		"static-fence":        "fence",
		"no-reentry":          "reentrant",
		"no-notify":           "notifier",
		"ignores-context":     "cancelled-context",
		"retry-contended":     "own-token-retry",
		"reentry-shortens":    "reentry-ttl",
		"delete-resets-fence": "delete-fence",
		"holders-unbounded":   "holders",
		"holders-no-expiry":   "holders-expiry",
	} {
		t.Run(bug, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestNaiveStore$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), bugEnv+"="+bug)
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "the suite passed a store with bug %q:\n%s", bug, out)
			require.Contains(t, string(out), "--- FAIL: TestNaiveStore/"+subtest, "bug %q", bug)
		})
	}
}

func (s *naiveStore) Delete(ctx context.Context, keys ...string) error {
	if err := ctx.Err(); err != nil && s.bug != "ignores-context" {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		delete(s.locks, k)
		delete(s.sems, k)
		if s.bug == "delete-resets-fence" {
			delete(s.fences, k)
		}
		s.wake(k)
	}
	return nil
}
