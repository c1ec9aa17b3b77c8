package redlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/throttle/redisstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// Store is a store.Store and store.Notifier that holds each lock on a
// quorum of independent Redis masters. It is safe for concurrent use; make
// one per set of nodes and share it.
type Store struct {
	nodes  []Node
	names  []string // the nodes' addresses, for errors
	quorum int
	// owned is set when New made the per-node stores, which Close then
	// closes; stores given to NewOnStores stay their owner's.
	owned bool
	// nodeTimeout is WithNodeTimeout's value, 0 for the automatic rule.
	nodeTimeout time.Duration

	// bg tracks the goroutines that outlive a call (a node still
	// answering after the decision, the release of its partial lock), so
	// that Close waits for them. mu orders bg.Add before Close's Wait.
	mu     sync.RWMutex
	closed bool
	bg     sync.WaitGroup
}

var (
	_ store.Store    = (*Store)(nil)
	_ store.Notifier = (*Store)(nil)
)

// New returns a Store over nodes, each an independent Redis master (see
// the package documentation for what independent means, and why one Redis
// Cluster is not that). Each node gets its own redisstore.Store, with the
// options given by WithStoreOptions.
//
// New fails with an error matching store.ErrInvalid when there are fewer
// than MinNodes nodes, a node is nil or a *redis.Ring, or two nodes are the
// same client or the same address. An odd number is recommended: 2f+1
// nodes survive f failures, and 2f+2 nodes survive no more.
//
// Like redisstore, the Store does not own the clients: Close leaves them
// open. Create them with ContextTimeoutEnabled: true, or go-redis ignores
// the node timeout on the network (the Store still decides without a node
// that is late, but its call goes on in the background until the client's
// ReadTimeout).
func New(nodes []redis.UniversalClient, opts ...Option) (*Store, error) {
	if err := checkCount(len(nodes), "redisstore"); err != nil {
		return nil, err
	}
	c := configure(opts)
	names := make([]string, len(nodes))
	seen := make(map[string]int, len(nodes))
	for i, n := range nodes {
		switch n.(type) {
		case nil:
			return nil, invalid("node %d is nil", i)
		case *redis.Ring:
			return nil, invalid("node %d is a *redis.Ring: a Ring's shards are not one master; pass one client per master", i)
		}
		names[i] = nodeName(n, i)
		if j, dup := seen[names[i]]; dup {
			return nil, invalid("nodes %d and %d are the same (%s): a lock held on one server twice "+
				"counts twice towards the quorum", j, i, names[i])
		}
		seen[names[i]] = i
	}
	stores := make([]Node, len(nodes))
	for i, n := range nodes {
		stores[i] = redisstore.New(n, c.nodeOpts...)
	}
	return build(stores, names, c, true), nil
}

// checkCount refuses fewer than MinNodes nodes; single names the store to
// use for one Redis instead.
func checkCount(n int, single string) error {
	if n < MinNodes {
		return invalid("%d nodes: Redlock needs at least %d independent masters (an odd number: "+
			"2f+1 survive f failures); for one Redis use %s", n, MinNodes, single)
	}
	return nil
}

// configure applies opts to the zero config.
func configure(opts []Option) config {
	var c config
	for _, o := range opts {
		o(&c)
	}
	return c
}

// build returns the Store over nodes, named by names; owned says whether
// Close closes the nodes (New made them) or leaves them to the caller.
func build(nodes []Node, names []string, c config, owned bool) *Store {
	return &Store{
		nodes:       nodes,
		names:       names,
		quorum:      quorumOf(len(nodes)),
		nodeTimeout: c.nodeTimeout,
		owned:       owned,
	}
}

// Node is a store on one independent master, as NewOnStores takes it:
// redisstore.New or rueidisstore.New on a client of that master. Redlock
// asks it to acquire, release, extend and watch; Close is called only by
// its owner.
type Node interface {
	store.Store
	store.Notifier
	Close() error
}

// NewOnStores returns a Store over per-master stores, one per independent
// master, instead of clients: pass rueidisstore stores to have the
// concurrent acquisitions of every node share round trips (rueidis's
// automatic pipelining), which is where Redlock spends its time under load:
// each admission is a command on every node. The rules of New apply (at
// least MinNodes, an odd number recommended, the same node never twice; a
// store cannot tell its address, so two stores on one server are not
// detected, and the caller must not pass them). WithStoreOptions does not
// apply. The stores stay the caller's: Close leaves them open.
func NewOnStores(nodes []Node, opts ...Option) (*Store, error) {
	if err := checkCount(len(nodes), "redisstore or rueidisstore"); err != nil {
		return nil, err
	}
	c := configure(opts)
	names := make([]string, len(nodes))
	for i, n := range nodes {
		if n == nil {
			return nil, invalid("node %d is nil", i)
		}
		for j := range i {
			if nodes[j] == n {
				return nil, invalid("nodes %d and %d are the same store: a lock held on one server twice "+
					"counts twice towards the quorum", j, i)
			}
		}
		names[i] = fmt.Sprintf("%T %d", n, i)
	}
	return build(slices.Clone(nodes), names, c, false), nil
}

// nodeName identifies a client for duplicate checks and error messages: its
// address for a standalone client, else its identity.
func nodeName(c redis.UniversalClient, i int) string {
	switch c := c.(type) {
	case *redis.Client:
		return c.Options().Addr
	case *redis.ClusterClient:
		return fmt.Sprintf("cluster%v", c.Options().Addrs)
	}
	return fmt.Sprintf("%T@%p", c, c)
}

// Quorum returns the number of nodes every decision needs: N/2+1 of N.
func (s *Store) Quorum() int { return s.quorum }

// Close waits for the calls still running in the background (nodes that
// answer after a decision, releases of partial locks; each bounded by its
// node timeout) and closes the per-node stores that New made (see
// redisstore.Store.Close); stores given to NewOnStores stay open.
// The clients stay open. Close is idempotent, and the Store keeps serving
// Acquire, Release and Extend after it, as redisstore does.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.bg.Wait()
	if !s.owned {
		return nil
	}
	errs := make([]error, len(s.nodes))
	for i, n := range s.nodes {
		if err := n.Close(); err != nil {
			errs[i] = fmt.Errorf("node %d (%s): %w", i, s.names[i], err)
		}
	}
	return errors.Join(errs...)
}

// spawn runs f on a goroutine that Close waits for (or, after Close, one it
// does not: Close has returned by then).
func (s *Store) spawn(f func()) {
	s.mu.RLock()
	tracked := !s.closed
	if tracked {
		s.bg.Add(1)
	}
	s.mu.RUnlock()
	go func() {
		if tracked {
			defer s.bg.Done()
		}
		f()
	}()
}

// Refuses returns the error Acquire gives for requests like req without
// asking any node, or nil when the Store takes them: it refuses fenced and
// reentrant requests (see the package documentation for why), and empty
// keys and tokens and TTLs that are not positive. The error matches
// store.ErrInvalid.
func (s *Store) Refuses(req store.Request) error {
	switch {
	case req.Fence:
		return invalid("fencing tokens refused: each node counts on its own, and a node that restarts " +
			"empty or is not in the next quorum breaks the order, so no number from a Redlock " +
			"strictly increases across holders; take fencing tokens from a single Redis " +
			"(redisstore) or a consensus store")
	case req.Reentrant:
		return invalid("reentrant requests refused: hold counts kept on several nodes drift apart " +
			"when a node misses a re-entry or a release, and the clean-up of a missed quorum " +
			"would take back an outer hold of the same owner")
	}
	return checkArgs(req.Key, req.Token, req.TTL)
}

// reservedToken is the hash field redisstore keeps a reentrant lock's fence
// in; it refuses it as a token.
const reservedToken = ":fence"

func checkArgs(key, token string, ttl time.Duration) error {
	switch {
	case key == "":
		return invalid("empty key")
	case token == "":
		return invalid("empty token")
	case token == reservedToken:
		return invalid("token %q is reserved", token)
	case ttl <= 0:
		return invalid("ttl %v is not positive", ttl)
	}
	return nil
}

// acquireTimeout is the node timeout of an Acquire or Extend for ttl.
func (s *Store) acquireTimeout(ttl time.Duration) time.Duration {
	if s.nodeTimeout > 0 {
		return s.nodeTimeout
	}
	return acquireTimeout(ttl)
}

// releaseTimeout is the node timeout of a Release and of the clean-up
// after a missed quorum.
func (s *Store) releaseTimeout() time.Duration {
	if s.nodeTimeout > 0 {
		return s.nodeTimeout
	}
	return DefaultNodeTimeout
}

// nodeErr names the node in its error.
func (s *Store) nodeErr(i int, err error) error {
	return fmt.Errorf("node %d (%s): %w", i, s.names[i], err)
}

// acquisition is the state one Acquire shares with its node goroutines.
type acquisition struct {
	timeout time.Duration  // the node timeout
	results chan nodeGrant // buffered for every node: sends never block
	// decided is closed once the caller's verdict is known. won and
	// consumed are written before and read after, so need no lock.
	decided chan struct{}
	won     bool
	keep    bool // a split vote whose grants are kept for the retry
	// consumed marks the nodes whose answer the decision used; the
	// decision releases their grants itself, and the node goroutines
	// release the other grants and every node whose outcome is unknown.
	consumed []bool
	// finished is done when every node call and its clean-up is over.
	finished sync.WaitGroup
}

type nodeGrant struct {
	i   int
	g   store.Grant
	err error
}

// Acquire takes req.Key on every node in parallel, each bounded by the node
// timeout and ctx, and holds the lock when a quorum (N/2+1) granted it in
// time. See the package documentation for the arithmetic; in short:
//
//   - the grant's TTL is the lock's validity: the TTL, less the time the
//     quorum took to answer and the drift allowance (store.Drift). When
//     that is not positive the acquisition fails with ErrLate;
//   - a refusal (somebody holds the key) comes once a quorum of nodes
//     answered and no quorum can grant; its Remaining is when a quorum
//     could come free (see retryAfter);
//   - too few answers (nodes down, slow or unreachable) is an error, a
//     *QuorumError;
//   - whenever the lock is not won, the nodes that granted it, and those
//     whose answer is unknown, are released with a context of their own
//     (not the caller's, which may be cancelled), bounded by the node
//     timeout.
//
// The decision comes as soon as the answers settle it, usually with the
// quorum-th answer: a slow node costs at most the node timeout, and calls
// to nodes that answer after the decision go on in the background (a late
// grant is part of our lock; a late grant of a refused or failed
// acquisition is released).
//
// A split vote, in which contenders that started together each took some
// nodes and none a quorum, is tried again up to splitRetries times before
// it is refused, so that one of them wins.
//
// Fenced and reentrant requests are refused with store.ErrInvalid (see
// Refuses).
func (s *Store) Acquire(ctx context.Context, req store.Request) (store.Grant, error) {
	if err := s.Refuses(req); err != nil {
		return store.Grant{}, err
	}
	if err := ctx.Err(); err != nil {
		return store.Grant{}, notApplied("acquire", err)
	}
	var refusal store.Grant // the last split vote's answer
	for retry := 0; ; retry++ {
		start := time.Now()
		a := s.startAcquire(ctx, req)
		g, hint, err := s.decideAcquire(ctx, a, req, start, retry < splitRetries)
		switch {
		case retry > 0 && err != nil:
			// The retry could not decide (the caller's deadline came,
			// nodes failed meanwhile; its grants, kept ones too, were
			// released): the split vote's refusal stands, rather than
			// turning a contended key into a store failure.
			return refusal, nil
		case hint == final:
			return g, err
		}
		// A split vote (see splitRetries). The token stays the same, so
		// unless the grants are kept, first wait until this attempt's
		// node calls and the releases of their late grants are over: a
		// late release must not free the next attempt's lock.
		refusal = g
		took := time.Since(start)
		var pause time.Duration
		if a.keep {
			pause = took/2 + rand.N(took/2+time.Millisecond)
		} else {
			a.finished.Wait()
			pause = took + rand.N(2*took+time.Millisecond)
		}
		if d, ok := ctx.Deadline(); ok && time.Until(d) < pause+took {
			return s.giveUp(ctx, a, req, refusal), nil
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return s.giveUp(ctx, a, req, refusal), nil
		case <-t.C:
		}
	}
}

// giveUp ends an acquisition that stops retrying after the split vote a:
// it releases, on every node, the grants a kept, if it did, once a's node
// calls are over (a late grant would stay behind otherwise), and returns
// the vote's refusal.
func (s *Store) giveUp(ctx context.Context, a *acquisition, req store.Request, refusal store.Grant) store.Grant {
	if a.keep {
		a.finished.Wait()
		all := make([]int, len(s.nodes))
		for i := range all {
			all[i] = i
		}
		s.releaseGranted(ctx, all, req)
	}
	return refusal
}

// retryHint says whether an attempt's answer is final.
type retryHint uint8

const (
	final         retryHint = iota // return the answer
	retryReleased                  // a split vote, grants released: retry after a pause
	retryKept                      // a split vote, grants kept: retry soon
)

// splitRetries is how often Acquire tries again after a split vote: a
// refusal by a quorum of nodes in which this acquisition had taken some
// nodes itself. That happens when several contenders start at once (three
// or more on three nodes, or two when a node is down): each takes some
// nodes, none a quorum, and all would be refused although nobody holds the
// key. A refusal without a node of ours (the key is held) is final at once.
//
// To break the tie, the contender that holds the lowest-numbered node that
// answered (no node before it is held by another) keeps its grants and
// tries again soon, after half to one attempt's duration: it finds its own
// nodes granted again (the own-token rule) and needs fewer new ones. The
// others release theirs and retry after a random pause of one to three
// attempts' durations, as the Redlock description prescribes. Two
// contenders that both think they hold the lowest node (a node answered
// one and not yet the other) just split again; the last retry releases
// everything that did not make a quorum.
const splitRetries = 3

// startAcquire sends req to every node, each call bounded by the node
// timeout and ctx.
func (s *Store) startAcquire(ctx context.Context, req store.Request) *acquisition {
	n := len(s.nodes)
	timeout := s.acquireTimeout(req.TTL)
	a := &acquisition{
		timeout:  timeout,
		results:  make(chan nodeGrant, n),
		decided:  make(chan struct{}),
		consumed: make([]bool, n),
	}
	a.finished.Add(n)
	for i, node := range s.nodes {
		s.spawn(func() {
			defer a.finished.Done()
			s.acquireNode(ctx, a, i, node, req)
		})
	}
	return a
}

// acquireNode asks one node, reports the answer, and once the acquisition
// is decided releases the node's possible lock if the acquisition was not
// won and the decision did not take care of it.
func (s *Store) acquireNode(ctx context.Context, a *acquisition, i int, node Node, req store.Request) {
	nctx, cancel := context.WithTimeout(ctx, a.timeout)
	g, err := node.Acquire(nctx, req)
	cancel()
	a.results <- nodeGrant{i: i, g: g, err: err}
	<-a.decided
	switch {
	case a.won || a.keep:
		// The key is part of our lock (a late grant too), or kept for
		// the next attempt, which finds it as its own.
	case err != nil && !errors.Is(err, store.ErrNotApplied):
		// The outcome is unknown: the node may have taken the key.
		s.releaseNode(ctx, i, req.Key, req.Token)
	case g.Acquired && !a.consumed[i]:
		// A grant the decision did not see (it releases the others).
		s.releaseNode(ctx, i, req.Key, req.Token)
	}
}

// releaseNode releases key on node i for token with a context of its own:
// not the caller's, which may have ended, but bounded by the release
// timeout. It is a clean-up: its outcome is not reported.
func (s *Store) releaseNode(ctx context.Context, i int, key, token string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.releaseTimeout())
	defer cancel()
	_, _ = s.nodes[i].Release(rctx, key, token)
}

// decideAcquire collects the nodes' answers until they settle the
// acquisition, the node timeout passes (the nodes still silent then count
// as failed) or ctx ends.
//
// The hint is final unless the answer is a split vote that may be retried
// (mayRetry): see splitRetries.
func (s *Store) decideAcquire(ctx context.Context, a *acquisition, req store.Request, start time.Time, mayRetry bool) (store.Grant, retryHint, error) {
	timeout := a.timeout
	n := len(s.nodes)
	t := tally{n: n, quorum: s.quorum}
	var (
		ttls, rems []time.Duration
		grantedBy  []int // the nodes whose grant the decision used
		firstHeld  = n   // the lowest node held by another token
		errs       = make([]error, n)
		cause      error // the caller's context error, when it ended first
		silent     bool  // some node never answered before the decision
	)
	record := func(r nodeGrant) {
		a.consumed[r.i] = true
		switch {
		case r.err != nil:
			t.failed++
			errs[r.i] = s.nodeErr(r.i, r.err)
		case r.g.Acquired:
			t.granted++
			ttls = append(ttls, r.g.TTL)
			grantedBy = append(grantedBy, r.i)
		default:
			t.held++
			rems = append(rems, r.g.Remaining)
			firstHeld = min(firstHeld, r.i)
		}
	}
	// A client without ContextTimeoutEnabled can overrun the node
	// timeout on the network; the timer keeps the decision near it
	// whatever the client does.
	timer := time.NewTimer(backstop(timeout))
	defer timer.Stop()
	v := pending
	for v == pending || (v == failed && t.granted == 0 && t.outstanding() > 0 && allNotApplied(errs)) {
		// (A failure is decided, but every node so far refused the
		// connection: the rest, normally as quick, say whether the error
		// may be marked store.ErrNotApplied.)
		select {
		case r := <-a.results:
			record(r)
			v = t.verdict()
			continue
		case <-timer.C:
		case <-ctx.Done():
			cause = ctx.Err()
		}
		// The node timeout passed or the caller gave up: the nodes that
		// have not answered count as failed.
		for i, c := range a.consumed {
			if !c {
				errs[i] = s.nodeErr(i, cmpErr(cause, fmt.Errorf("no answer within %v", timeout)))
			}
		}
		silent = true
		t.failed += t.outstanding()
		v = t.verdict()
	}

	var lateErr error
	if v == won {
		left := validity(req.TTL, s.quorum, ttls, time.Since(start))
		if left > 0 {
			a.won = true
			close(a.decided)
			return store.Grant{Acquired: true, TTL: left, Holds: 1}, final, nil
		}
		lateErr = fmt.Errorf("redlock: acquire: %w (%d nodes granted in %v, TTL %v)", ErrLate, t.granted, time.Since(start), req.TTL)
	}
	if v == refused {
		// The refusal's Retry-After comes from the answers at hand;
		// those that arrived meanwhile make it more exact for free.
	drain:
		for t.outstanding() > 0 {
			select {
			case r := <-a.results:
				record(r)
			default:
				break drain
			}
		}
	}
	hint := final
	if v == refused && t.granted > 0 && mayRetry {
		hint = retryReleased
		if slices.Min(grantedBy) < firstHeld {
			hint = retryKept
		}
	}
	a.keep = hint == retryKept
	close(a.decided)
	if !a.keep {
		s.releaseGranted(ctx, grantedBy, req)
	}

	switch {
	case lateErr != nil:
		return store.Grant{}, final, lateErr
	case v == refused:
		return store.Grant{Remaining: retryAfter(s.quorum, t.granted, rems)}, hint, nil
	}
	for i, c := range a.consumed {
		if !c && errs[i] == nil {
			errs[i] = s.nodeErr(i, errNotWaited)
		}
	}
	qe := &QuorumError{Op: "acquire", Quorum: s.quorum, Answered: t.granted + t.held, Errs: errs, cause: cause,
		notApplied: t.granted == 0 && !silent && allNotApplied(errs)}
	return store.Grant{}, final, qe
}

// allNotApplied reports whether every error in errs (nil entries aside)
// says that its call changed nothing (store.ErrNotApplied); errNotWaited
// does not.
func allNotApplied(errs []error) bool {
	for _, err := range errs {
		if err != nil && !errors.Is(err, store.ErrNotApplied) {
			return false
		}
	}
	return true
}

// backstop is when a call stops waiting for nodes whose calls overrun the
// node timeout (clients without ContextTimeoutEnabled). It leaves the node
// calls, which end at the timeout, time to report their own errors first.
func backstop(timeout time.Duration) time.Duration { return timeout + timeout/4 + 2*time.Millisecond }

// errNotWaited stands for the answer of a node that an acquisition did not
// wait for: the others had failed, so no quorum could answer any more.
var errNotWaited = errors.New("not waited for: too many other nodes failed for a quorum")

// cmpErr returns err, or def when err is nil.
func cmpErr(err, def error) error {
	if err != nil {
		return err
	}
	return def
}

// releaseGranted releases, in parallel, the partial locks of a lost
// acquisition on the nodes whose grant the decision used, and waits: they
// answered a moment ago, so this costs about one round trip, and the
// caller's next try, or a contender's, does not trip over them. Nodes that
// failed or answered after the decision release their own in the
// background (acquireNode); nodes that refused took nothing.
func (s *Store) releaseGranted(ctx context.Context, nodes []int, req store.Request) {
	var wg sync.WaitGroup
	for _, i := range nodes {
		wg.Go(func() { s.releaseNode(ctx, i, req.Key, req.Token) })
	}
	wg.Wait()
}

// nodeOutcome is one node's answer to a Release or an Extend.
type nodeOutcome struct {
	i   int
	out store.Outcome
	err error
}

// fanOut runs op on every node in parallel, each call bounded by timeout,
// and collects the answers until they settle the call (see
// outcomes.decided), the timeout passes or ctx ends; nodes silent by then
// count as failed, and their calls go on in the background. Node calls end
// with ctx unless detach is set; then only the timeout bounds them.
func (s *Store) fanOut(ctx context.Context, timeout time.Duration, detach bool,
	op func(ctx context.Context, node Node) (store.Outcome, error)) (outcomes, []error, error) {
	n := len(s.nodes)
	results := make(chan nodeOutcome, n)
	parent := ctx
	if detach {
		parent = context.WithoutCancel(ctx)
	}
	for i, node := range s.nodes {
		s.spawn(func() {
			nctx, cancel := context.WithTimeout(parent, timeout)
			out, err := op(nctx, node)
			cancel()
			results <- nodeOutcome{i: i, out: out, err: err}
		})
	}
	o := outcomes{n: n, quorum: s.quorum}
	errs := make([]error, n)
	answered := make([]bool, n)
	timer := time.NewTimer(backstop(timeout))
	defer timer.Stop()
	var cause error
	for !o.decided() {
		select {
		case r := <-results:
			answered[r.i] = true
			switch {
			case r.err != nil:
				o.failed++
				errs[r.i] = s.nodeErr(r.i, r.err)
			case r.out == store.OK || r.out == store.StillHeld:
				o.ours++
			case r.out == store.HeldByOther:
				o.other++
			default:
				o.gone++
			}
			continue
		case <-timer.C:
		case <-ctx.Done():
			cause = ctx.Err()
		}
		for i, a := range answered {
			if !a {
				o.failed++
				errs[i] = s.nodeErr(i, cmpErr(cause, fmt.Errorf("no answer within %v", timeout)))
			}
		}
	}
	return o, errs, cause
}

// settle turns the answers of a Release or Extend into its result.
func (s *Store) settle(op string, o outcomes, errs []error, cause error) (store.Outcome, error) {
	out, unknown := o.outcome()
	if !unknown {
		return out, nil
	}
	answered := o.ours + o.other + o.gone
	return 0, &QuorumError{Op: op, Quorum: s.quorum, Answered: answered, Errs: errs, cause: cause,
		notApplied: answered == 0 && cause == nil && allNotApplied(errs)}
}

// Release frees key on every node where token holds it, in parallel, and
// reports OK when a quorum of nodes had token (the lock was ours and is
// free now). Otherwise it waits for every node and reports, from their
// answers (see the package documentation on disagreeing nodes):
// HeldByOther when other tokens hold, or may hold, a quorum; a *QuorumError
// when the outcome depends on nodes that failed; Gone otherwise.
//
// Every node is asked, also those where the key is not ours, so that the
// partial locks of a lock that lost its quorum are freed too. The node
// calls do not end with ctx (Release is a clean-up, and a caller that gives
// up must not leave a lock behind): each is bounded by the release timeout;
// a ctx that ends makes Release return at once with its error while the
// node calls finish in the background. A ctx that
// has already ended when Release is called sends nothing.
func (s *Store) Release(ctx context.Context, key, token string) (store.Outcome, error) {
	if err := checkArgs(key, token, time.Millisecond); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, notApplied("release", err)
	}
	o, errs, cause := s.fanOut(ctx, s.releaseTimeout(), true,
		func(ctx context.Context, node Node) (store.Outcome, error) {
			return node.Release(ctx, key, token)
		})
	return s.settle("release", o, errs, cause)
}

// Extend sets key's time to live to ttl on every node where token holds
// it, in parallel, and reports OK when a quorum of nodes extended it within
// the new validity: before ttl, less the drift allowance, passed since the
// call started (later, some node of the quorum may already have let the
// key go, and Extend fails with ErrLate; the key stays extended where it
// was, and a retry may still succeed). The other outcomes are Release's.
func (s *Store) Extend(ctx context.Context, key, token string, ttl time.Duration) (store.Outcome, error) {
	if err := checkArgs(key, token, ttl); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, notApplied("extend", err)
	}
	start := time.Now()
	o, errs, cause := s.fanOut(ctx, s.acquireTimeout(ttl), false,
		func(ctx context.Context, node Node) (store.Outcome, error) {
			return node.Extend(ctx, key, token, ttl)
		})
	out, err := s.settle("extend", o, errs, cause)
	if out == store.OK {
		if elapsed := time.Since(start); elapsed >= ttl-store.Drift(ttl) {
			return 0, fmt.Errorf("redlock: extend: %w (%d nodes extended in %v, TTL %v)", ErrLate, o.ours, elapsed, ttl)
		}
	}
	return out, err
}
