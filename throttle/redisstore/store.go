package redisstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/internal/redislua"
	"github.com/go-throttle/throttle/throttle/store"
)

// Store is a throttle.Store and store.Notifier on one Redis deployment.
// It is safe for concurrent use; make one per client and share it.
type Store struct {
	client       redis.UniversalClient
	fenceTTL     time.Duration
	fenceTTLArg  any // millis(fenceTTL), boxed once for the acquire script
	watchTimeout time.Duration

	// scriptedPlain makes plain (not fenced, not reentrant) acquisitions
	// run the acquire script instead of SET NX PX. Every path costs one
	// round trip for a grant; SET is the default because it measured
	// faster (see the benchmarks). Tests flip it to check every path.
	scriptedPlain bool

	// plainPath, set only by tests (SetPlainPath), holds plain
	// acquisitions on one path; the zero value chooses by refusals.
	plainPath plainPath

	// refusals estimates how often plain acquisitions find the key
	// held, which decides their path (see plainPath).
	refusals redislua.Share

	// returning estimates how often quota charges find their key
	// already there (a returning user),
	// which decides whether a charge first tries SET NX (see setFirst).
	returning redislua.Share
	// quotaPath, set only by tests (SetQuotaPath), holds charges on one
	// path; the zero value chooses by returning.
	quotaPath quotaPath

	// ttlArgs keeps the boxed PX arguments of the TTLs in use.
	ttlArgs ttlArgs

	// quotaNow, set only by tests (SetQuotaClock), gives AllowN's script
	// the time instead of the server's TIME.
	quotaNow func() time.Time

	// ack is WithReplicaAck's setting; the zero value waits for nobody.
	ack replicaAck

	watch watcher
}

// New returns a Store on client, which may be a *redis.Client, a
// *redis.ClusterClient or a Sentinel failover client
// (redis.NewFailoverClient): every command the store sends touches keys of
// one Redis Cluster hash slot.
//
// New panics when client is nil or a *redis.Ring. A Ring shards keys over
// independent servers, and each Ring client routes by its own view of which
// shards are up ("no consistency between different shards or even
// clients", says go-redis): two processes that disagree about a shard take
// the same lock on two servers. Use a Cluster instead. (A wrapper type that
// hides a Ring cannot be detected; it is no safer.)
//
// The store does not own the client: Close stops the store's goroutines
// but leaves the client open.
//
// Create the client with ContextTimeoutEnabled: true so that a store call
// ends at its context's deadline (throttle.Policy.Timeout); without it,
// go-redis bounds network reads and writes by ReadTimeout and WriteTimeout
// (3 s by default) and ignores the context's deadline while it waits. New
// logs a warning when it can tell that the client ignores deadlines.
//
// New also asks Redis, in the background and once, for its
// maxmemory-policy, and logs a warning unless it is noeviction (see the
// package documentation); it says nothing when Redis does not allow
// CONFIG GET. Neither check delays New or makes it fail.
func New(client redis.UniversalClient, opts ...Option) *Store {
	switch client.(type) {
	case nil:
		panic("redisstore: New needs a non-nil client")
	case *redis.Ring:
		panic("redisstore: a *redis.Ring cannot hold locks: each Ring client routes a key by its own " +
			"view of which shards are up, so two processes can take one lock on two servers; " +
			"use a *redis.ClusterClient, a *redis.Client or a Sentinel failover client")
	}
	c := config{fenceTTL: DefaultFenceTTL, watchTimeout: DefaultWatchTimeout}
	for _, o := range opts {
		o(&c)
	}
	c.ack.check(client)
	s := &Store{client: client, fenceTTL: c.fenceTTL, fenceTTLArg: millis(c.fenceTTL), watchTimeout: c.watchTimeout, ack: c.ack}
	s.watch.init(s)
	warnIfDeadlinesIgnored(c.log(), client)
	s.watch.checkEviction(client, c.log())
	return s
}

// Close stops the store's background goroutines (the shared Pub/Sub
// subscription of Watch and the start-up check) and waits for them, at most
// twice the watch timeout even when Redis hangs; watches still open are woken
// no more (their Limiters fall back to polling). It returns an error only when
// they did not stop in time, which takes a hung Redis and a client without
// ContextTimeoutEnabled; they then end once go-redis gives up. The client
// stays open. Close is idempotent and the store keeps serving Acquire,
// Release and Extend after it.
func (s *Store) Close() error { return s.watch.close() }

var (
	_ store.Store    = (*Store)(nil)
	_ store.Notifier = (*Store)(nil)
)

// Acquire takes req.Key in one round trip (see the package documentation
// for the data model); a plain acquisition that finds the key held may take
// a second one to learn how long (see the package documentation on round
// trips). A key that somebody else holds is not an error: the grant reports
// how long they keep it.
//
// With WithReplicaAck, a grant that too few replicas acknowledged is given
// back with a token-checked release and reported as an error matching
// ErrNotReplicated (and store.ErrNotApplied once the release succeeded).
func (s *Store) Acquire(ctx context.Context, req store.Request) (store.Grant, error) {
	if err := checkRequest(req.Key, req.Token, req.TTL); err != nil {
		return store.Grant{}, err
	}
	var g store.Grant
	var err error
	switch {
	case req.Fence || req.Reentrant || s.scriptedPlain:
		g, err = s.acquireScripted(ctx, req)
	case s.pipelines():
		g, err = s.acquirePipelined(ctx, req)
		s.refusals.Observe(err == nil && !g.Acquired)
	default:
		g, err = s.acquireSet(ctx, req)
		s.refusals.Observe(err == nil && !g.Acquired)
	}
	if errors.Is(err, errUnvouched) {
		if err = s.ack.vouch(ctx, s.client, req.Key, req.Token, g.TTL); err == nil {
			return g, nil
		}
	}
	if errors.Is(err, ErrNotReplicated) {
		// The master gave us the key, but a failover could hand it to
		// somebody else: free it rather than leave it held by a request
		// that is told it failed. If the release fails too, the error
		// leaves the outcome open and the Limiter retries the release.
		if _, rerr := s.Release(ctx, req.Key, req.Token); rerr != nil {
			return store.Grant{}, fmt.Errorf("%w; releasing the key again: %v", err, rerr)
		}
		return store.Grant{}, fmt.Errorf("%w; the key was released again (%w)", err, store.ErrNotApplied)
	}
	if err != nil {
		return store.Grant{}, err
	}
	return g, nil
}

// plainPath is the way a plain (not fenced, not reentrant) acquisition
// takes its key. Both ways are one round trip for a grant; they differ in
// what a refusal costs, and in what a grant costs on the client.
type plainPath uint8

const (
	// pathAuto, the default, takes pathSet while refusals are rare and
	// pathPipeline while they are frequent (refusals.Frequent).
	pathAuto plainPath = iota
	// pathSet sends SET key token NX PX ttl alone, the very command of
	// go-redis's SetNX: a grant costs what SetNX costs (8 allocations
	// each, 282 B; SetNX's throughput, BenchmarkAdmissionPaired). A
	// refusal then needs the key's holder and PTTL, one more round trip
	// (GET and PTTL pipelined, 23 allocations in all): twice the latency
	// of a grant, and half SetNX's throughput on a hot key (0.46 to 0.54
	// at 16 and 64 goroutines).
	pathSet
	// pathPipeline sends SET NX PX, GET and PTTL in one pipeline: a
	// refusal costs no second round trip (0.84 to 0.93 of SetNX's
	// throughput on a hot key), but every acquisition sends three
	// commands and builds a pipeline (about 0.9 of SetNX's throughput on
	// distinct keys, and 19 allocations per grant).
	pathPipeline
)

// pipelines reports whether a plain acquisition goes through the pipeline
// rather than SET alone: with WithReplicaAck (WAIT must follow the write on
// its connection, in the same pipeline), under the test hook SetPlainPath,
// or while refusals are frequent.
func (s *Store) pipelines() bool {
	switch {
	case s.ack.replicas > 0:
		return true
	case s.plainPath != pathAuto:
		return s.plainPath == pathPipeline
	}
	return s.refusals.Frequent()
}

// ttlArgs keeps boxed PX and PEXPIRE arguments for the TTLs a store sees
// (most stores see one or a few: a Policy's TTL). go-redis takes command
// arguments as interface values, and boxing an int64 of 256 or more
// allocates 8 bytes every time; the list holds at most ttlArgsMax boxes,
// copied on write and never evicted, so a store whose TTLs vary without
// end boxes the rest per call, as before.
type ttlArgs struct{ list atomic.Pointer[[]boxedMillis] }

type boxedMillis struct {
	ms  int64
	arg any
}

const ttlArgsMax = 8

// arg returns ms as a command argument.
func (t *ttlArgs) arg(ms int64) any {
	if ms < 256 {
		return ms // the runtime boxes small integers without allocating
	}
	cur := t.list.Load()
	if cur != nil {
		for _, b := range *cur {
			if b.ms == ms {
				return b.arg
			}
		}
	}
	arg := any(ms)
	if cur == nil || len(*cur) < ttlArgsMax {
		var next []boxedMillis
		if cur != nil {
			next = append(next, *cur...)
		}
		next = append(next, boxedMillis{ms, arg})
		t.list.CompareAndSwap(cur, &next) // a lost race only leaves ms to a later call
	}
	return arg
}

// acquireSet takes req.Key with SET key token NX PX ttl alone, as a BoolCmd
// like go-redis's SetNX, whose reply parser turns the nil reply of a
// refused SET into false without an error. A refusal asks who holds the
// key (refused).
//
// SET key token NX PX ttl GET (Redis 7.0), which also returns the holder
// of a refused key, was measured and lost: its grant is the nil reply,
// which go-redis v9.22 returns as the error redis.Nil and runs through its
// retry classification (a chain of errors.As), 28 allocations per grant
// against SetNX's 8. It would only spare a refusal its GET, not its PTTL,
// and needed a fallback for older servers.
func (s *Store) acquireSet(ctx context.Context, req store.Request) (store.Grant, error) {
	ttl := roundUp(req.TTL)
	px := s.ttlArgs.arg(int64(ttl / time.Millisecond))
	set := redis.NewBoolCmd(ctx, "set", req.Key, req.Token, "px", px, "nx")
	set.SetFirstKeyPos(1)
	_ = s.client.Process(ctx, set)
	ok, err := set.Result()
	switch {
	case err != nil:
		return store.Grant{}, acquireError(err)
	case ok:
		return store.Grant{Acquired: true, TTL: ttl, Holds: 1}, nil
	}
	return s.refused(ctx, req)
}

// refused follows a refused SET NX (acquireSet) with GET and PTTL of the
// key in one pipeline: the holder's token and time to live. The holder may
// be req.Token itself, when go-redis retried the SET after losing the reply
// of one that took the key: the key is then ours (see holder).
//
// An error here is not marked store.ErrNotApplied even when the pipeline
// surely never left (see callError): the SET before it may have been such
// a retry, so the key may be ours, and the Limiter must try to free it.
func (s *Store) refused(ctx context.Context, req store.Request) (store.Grant, error) {
	k := any(req.Key) // boxed once for both commands
	args := [...]any{"get", k, "pttl", k}
	get := redis.NewStringCmd(ctx, args[0:2:2]...)
	pttl := redis.NewIntCmd(ctx, args[2:4:4]...)
	p := s.client.Pipeline()
	_ = p.BatchProcess(ctx, get, pttl)
	_, _ = p.Exec(ctx)
	if err := pttl.Err(); err != nil {
		return store.Grant{}, fmt.Errorf("redisstore: acquire: %w", err)
	}
	return holder(req, get, pttl.Val()), nil
}

// holder reads the reply of GET key (get) and PTTL key (ms) after a refused
// SET NX. GET fails harmlessly when the key is missing (redis.Nil: it
// expired after the SET) or is a reentrant hash (WRONGTYPE): neither holds
// req.Token. Our own token, on a key that has not expired meanwhile, is a
// retry of a command whose reply was lost (go-redis retries after network
// errors): the key is ours, for what is left of its TTL.
func holder(req store.Request, get *redis.StringCmd, ms int64) store.Grant {
	if ms > 0 && get.Err() == nil && get.Val() == req.Token {
		return store.Grant{Acquired: true, TTL: remaining(ms), Holds: 1}
	}
	return store.Grant{Remaining: remaining(ms)}
}

// acquirePipelined sends SET key token NX PX ttl, GET key and PTTL key in
// one pipeline: one round trip, no script, and the PTTL answers a
// rejection. With WithReplicaAck, WAIT follows in the same pipeline. The
// key is boxed once for the three commands, whose arguments share one
// array, and the commands go in with one BatchProcess: 19 allocations per
// grant, where the Pipeliner's helpers (SetNX, Get, PTTL) measured 24.
func (s *Store) acquirePipelined(ctx context.Context, req store.Request) (store.Grant, error) {
	ttl := roundUp(req.TTL)
	px := s.ttlArgs.arg(int64(ttl / time.Millisecond))
	k := any(req.Key)
	args := [...]any{"set", k, req.Token, "px", px, "nx", "get", k, "pttl", k}
	set := redis.NewBoolCmd(ctx, args[0:6:6]...)
	get := redis.NewStringCmd(ctx, args[6:8:8]...)
	pttl := redis.NewIntCmd(ctx, args[8:10:10]...)
	p := s.client.Pipeline()
	_ = p.BatchProcess(ctx, set, get, pttl)
	wait := s.ack.queue(ctx, p)
	_, _ = p.Exec(ctx)
	if err := cmp.Or(set.Err(), pttl.Err()); err != nil {
		return store.Grant{}, acquireError(err)
	}
	if set.Val() {
		if err := s.ack.confirm(wait, true); err != nil {
			return store.Grant{}, err
		}
		return store.Grant{Acquired: true, TTL: ttl, Holds: 1}, nil
	}
	g := holder(req, get, pttl.Val())
	if g.Acquired {
		// This call wrote nothing, so its WAIT cannot vouch for the
		// earlier write: Acquire has it confirmed (errUnvouched).
		return g, s.ack.confirm(wait, false)
	}
	return g, nil
}

// acquireError wraps an error of an acquisition (see callError).
func acquireError(err error) error { return callError("acquire", err) }

// callError wraps an error of a store call, marking those that surely
// changed nothing in Redis (no connection could be made, the client is
// closed) with store.ErrNotApplied: the Limiter then does not try to free a
// key the command never took, nor keep asking a server that refuses.
func callError(op string, err error) error {
	var nerr *net.OpError
	if (errors.As(err, &nerr) && nerr.Op == "dial") || errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.ErrPoolTimeout) {
		return fmt.Errorf("redisstore: %s: %w: %w", op, store.ErrNotApplied, err)
	}
	return fmt.Errorf("redisstore: %s: %w", op, err)
}

// acquireScripted runs the acquire script. With WithReplicaAck it sends
// EVALSHA and WAIT as one pipeline (see replicaAck.eval).
func (s *Store) acquireScripted(ctx context.Context, req store.Request) (store.Grant, error) {
	// The fence counter is passed only when the script may touch it: a
	// script on one key keeps working while its Cluster slot migrates,
	// where one on two keys meets TRYAGAIN.
	ttlArg := s.ttlArgs.arg(millis(req.TTL))
	var res []int64
	var wait *redis.IntCmd
	var err error
	if s.ack.replicas > 0 {
		keys := []string{req.Key}
		if req.Fence {
			keys = append(keys, store.FenceKey(req.Key))
		}
		var cmd *redis.Cmd
		cmd, wait = s.ack.eval(ctx, s.client, acquireScript.Script, keys,
			req.Token, ttlArg, flag(req.Fence), flag(req.Reentrant), s.fenceTTLArg)
		res, err = cmd.Int64Slice()
	} else {
		args := make([]any, 0, 10)
		args = append(args, nil, nil, "1", req.Key)
		if req.Fence {
			args[2] = "2"
			args = append(args, store.FenceKey(req.Key))
		}
		args = append(args, req.Token, ttlArg, flag(req.Fence), flag(req.Reentrant), s.fenceTTLArg)
		res, err = run(ctx, s.client, acquireScript, redis.NewCmd, args).Int64Slice()
	}
	if err != nil {
		return store.Grant{}, acquireError(err)
	}
	if len(res) != 4 {
		return store.Grant{}, fmt.Errorf("redisstore: acquire: unexpected script reply %v", res)
	}
	if res[0] == 1 {
		g := store.Grant{Acquired: true, TTL: time.Duration(res[3]) * time.Millisecond, Fence: res[1], Holds: int(res[2])}
		// Every scripted grant writes (the key, a hold or the fence
		// counter), so WAIT covers it, except a plain retry that found
		// its own token: the script reports it with the key's PTTL
		// rather than the full TTL. (Plain acquisitions come here only
		// under the test hook SetScriptedPlain.)
		written := req.Fence || req.Reentrant || res[3] == millis(req.TTL)
		if err := s.ack.confirm(wait, written); err != nil {
			if errors.Is(err, errUnvouched) {
				return g, err
			}
			return store.Grant{}, err
		}
		return g, nil
	}
	return store.Grant{Remaining: remaining(res[1])}, nil
}

// Release frees key if token holds it, deletes its record (see Record), and
// then publishes on the key's release channel so that Watch wakes the
// waiters, all in one script and one round trip. A reentrant key loses one
// hold and is freed, with its record, at zero.
func (s *Store) Release(ctx context.Context, key, token string) (store.Outcome, error) {
	if err := checkRequest(key, token, time.Millisecond); err != nil {
		return 0, err
	}
	n, err := release(ctx, s.client, key, token).Result()
	if err != nil {
		return 0, callError("release", err)
	}
	return outcome("release", n)
}

// Extend sets key's time to live to ttl if token holds it, in one script and
// one round trip. It does not change a reentrant key's hold count.
func (s *Store) Extend(ctx context.Context, key, token string, ttl time.Duration) (store.Outcome, error) {
	if err := checkRequest(key, token, ttl); err != nil {
		return 0, err
	}
	args := []any{nil, nil, "1", key, token, s.ttlArgs.arg(millis(ttl))}
	n, err := run(ctx, s.client, extendScript, redis.NewIntCmd, args).Result()
	if err != nil {
		return 0, callError("extend", err)
	}
	return outcome("extend", n)
}

func outcome(op string, n int64) (store.Outcome, error) {
	if out, ok := redislua.Outcome(n, op == "release"); ok {
		return out, nil
	}
	return 0, fmt.Errorf("redisstore: %s: unexpected script reply %d", op, n)
}

// errInvalid is wrapped by every argument error so that callers can match
// store.ErrInvalid.
var errInvalid = store.ErrInvalid

func checkRequest(key, token string, ttl time.Duration) error {
	return redislua.CheckRequest("redisstore", key, token, ttl)
}

// roundUp rounds a positive duration up to a whole millisecond, the
// resolution of PX and PEXPIRE, saturating at redislua.TTLCeiling instead
// of overflowing.
func roundUp(d time.Duration) time.Duration { return time.Duration(millis(d)) * time.Millisecond }

// millis and remaining are the TTL and PTTL rules every Redis store shares
// (see redislua.Millis and redislua.Remaining).
var (
	millis    = redislua.Millis
	remaining = redislua.Remaining
)

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// channel is the Pub/Sub channel the release script publishes on when it
// frees key.
func channel(key string) string { return key + channelSuffix }

const channelSuffix = ":released"
