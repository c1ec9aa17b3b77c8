package redlock

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// Store is a store.Store and store.Notifier that holds each lock on a
// quorum of independent Redis masters. It is safe for concurrent use.
type Store struct {
	nodes         []store.Store
	timeout       time.Duration  // WithNodeTimeout's, 0 for the automatic rule
	mu            sync.RWMutex   // orders bg.Add before Close's Wait
	bg            sync.WaitGroup // the node calls that outlive a decision
	closed, owned bool           // owned: New made the nodes, for Close to close
	pending       sync.Map       // key and token of a grant whose late node calls run: a chan closed when they end
	live          storekit.Liveness
	quiet         []atomic.Bool // per node: its last call had no answer in time (see tally.settled)
}

// Liveness returns what the limiters on s know of its answers: every node's
// answer counts, so that a call retrying a split vote while the nodes
// answer is not taken for one waiting on a silent store.
func (s *Store) Liveness() *storekit.Liveness { return &s.live }

// errNoQuorum is matched by the error of a call that no quorum decided in
// time, and that error by store.ErrNotApplied when it surely changed nothing.
var errNoQuorum = errors.New("redlock: no quorum")

// Option configures a Store.
type Option func(*Store)

// WithNodeTimeout sets how long a call waits for each node instead of a
// tenth of the TTL, at most 100 ms: raise it when bursts queue for the
// clients' connections, but keep it well below the shortest TTL, whose
// validity it eats. d <= 0 restores the automatic rule.
func WithNodeTimeout(d time.Duration) Option {
	return func(s *Store) { s.timeout = max(d, 0) }
}

// New returns a Store over clients, one per independent Redis master. It
// refuses, with store.ErrInvalid, fewer than three clients, a nil client, a
// *redis.Ring (not one master) and two clients of one address, whose lock
// would count twice.
func New(clients []redis.UniversalClient, opts ...Option) (*Store, error) {
	names := make([]string, len(clients))
	for i, c := range clients {
		switch c := c.(type) {
		case *redis.Ring:
			return nil, invalid("node %d is a *redis.Ring, whose shards are not one master", i)
		case *redis.Client:
			names[i] = c.Options().Addr
		case redis.UniversalClient: // not nil
			names[i] = fmt.Sprintf("%p", c)
		}
	}
	s, err := build(make([]store.Store, len(clients)), names, opts)
	if err != nil {
		return nil, err
	}
	for i, c := range clients {
		s.nodes[i] = redisstore.New(c)
	}
	s.owned = true
	return s, nil
}

// NewOnStores returns a Store over stores, one per independent master, such
// as rueidisstore stores or redisstore stores made with options. The rules
// of New apply; Close leaves the stores open.
func NewOnStores(stores []store.Store, opts ...Option) (*Store, error) {
	names := make([]string, len(stores))
	for i, st := range stores {
		if st != nil {
			names[i] = fmt.Sprintf("%p", st)
		}
	}
	return build(slices.Clone(stores), names, opts)
}

// build returns a Store over nodes once their names ("" for nil) pass New's rules.
func build(nodes []store.Store, names []string, opts []Option) (*Store, error) {
	if len(names) < 3 {
		return nil, invalid("%d nodes: Redlock needs at least 3 independent masters", len(names))
	}
	for i, name := range names {
		if name == "" {
			return nil, invalid("node %d is nil", i)
		}
		if j := slices.Index(names[:i], name); j >= 0 {
			return nil, invalid("nodes %d and %d are the same (%s)", j, i, name)
		}
	}
	s := &Store{nodes: nodes, quiet: make([]atomic.Bool, len(nodes))}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// Close waits for the node calls still running in the background and closes
// the stores New made. The Store keeps serving calls after it.
func (s *Store) Close() error {
	s.mu.Lock()
	owned := s.owned
	s.closed, s.owned = true, false
	s.mu.Unlock()
	s.bg.Wait()
	var err error
	for _, n := range s.nodes {
		if c, ok := n.(io.Closer); ok && owned {
			err = errors.Join(err, c.Close())
		}
	}
	return err
}

// spawn runs f on a goroutine that Close waits for, unless Close was called.
func (s *Store) spawn(f func()) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		go f()
		return
	}
	s.bg.Go(f)
}

// nodeTimeout is a tenth of ttl, from 1 ms to 100 ms (a limiter's default
// Policy.Timeout), which a Release (ttl 0) gets too.
func (s *Store) nodeTimeout(ttl time.Duration) time.Duration {
	if s.timeout > 0 {
		return s.timeout
	}
	return min(max(cmp.Or(ttl, time.Second)/10, time.Millisecond), 100*time.Millisecond)
}

// Refuses returns the error, matching store.ErrInvalid, that Acquire gives
// for req, or nil: fencing tokens, reentrancy and several holders per key
// (Request.Holders above 1) are refused, so that a limiter rejects a config
// asking for them at construction.
func (s *Store) Refuses(req store.Request) error {
	switch {
	case req.Fence:
		return invalid("fencing tokens refused: no number from independent nodes strictly increases across holders")
	case req.Reentrant:
		return invalid("reentrant requests refused: hold counts on several nodes drift apart")
	case req.Holders > 1:
		return invalid("several holders per key refused: independent nodes would each admit " +
			"their own set of holders, and no quorum bounds how many hold the key at once")
	}
	if err := storekit.CheckHolders("redlock", req); err != nil {
		return err
	}
	return storekit.CheckLock("redlock", req.Key, req.Token, req.TTL)
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: redlock: "+format, append([]any{store.ErrInvalid}, args...)...)
}

// notApplied is the error of a call that ctx ended before it was sent.
func notApplied(op string, err error) error {
	return fmt.Errorf("redlock: %s: %w: %w", op, store.ErrNotApplied, err)
}

// noQuorum is the error of a call that the answers in t cannot decide.
func noQuorum(op string, t *tally, cause error) error {
	err := fmt.Errorf("%w: %s: %d of %d nodes answered, a decision needs %d",
		errNoQuorum, op, t.answered(), t.n, t.quorum)
	for i, e := range t.errs {
		if e != nil {
			err = fmt.Errorf("%w; node %d: %v", err, i, e)
		}
	}
	if t.ours == 0 && !slices.ContainsFunc(t.errs, applied) {
		err = fmt.Errorf("%w (%w)", err, store.ErrNotApplied)
	}
	if cause != nil {
		err = fmt.Errorf("%w (%w)", err, cause)
	}
	return err
}

// applied reports whether a node's error may hide a change.
func applied(err error) bool { return err != nil && !errors.Is(err, store.ErrNotApplied) }
