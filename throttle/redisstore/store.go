package redisstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-throttle/throttle/throttle/store"
)

// Store is a throttle.Store and store.Notifier on one Redis deployment.
// It is safe for concurrent use; make one per client and share it.
type Store struct {
	client       redis.UniversalClient
	fenceTTL     time.Duration
	watchTimeout time.Duration

	// scriptedPlain makes plain (not fenced, not reentrant) acquisitions
	// run the acquire script instead of the SET+PTTL pipeline. Both cost
	// one round trip; the pipeline is the default because it measured
	// faster (see the benchmarks). Tests flip it to check both.
	scriptedPlain bool

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
	s := &Store{client: client, fenceTTL: c.fenceTTL, watchTimeout: c.watchTimeout, ack: c.ack}
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

// hashFenceField is the hash field of a reentrant lock that keeps its fence;
// tokens made by store.NewToken never contain ':', so it cannot clash.
const hashFenceField = ":fence"

// Acquire takes req.Key in one round trip (see the package documentation
// for the data model). A key that somebody else holds is not an error: the
// grant reports how long they keep it.
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
	if !req.Fence && !req.Reentrant && !s.scriptedPlain {
		g, err = s.acquirePipelined(ctx, req)
	} else {
		g, err = s.acquireScripted(ctx, req)
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

// acquirePipelined sends SET key token NX PX ttl, GET key and PTTL key in
// one pipeline: one round trip, no script, and the PTTL answers a
// rejection. With WithReplicaAck, WAIT follows in the same pipeline.
func (s *Store) acquirePipelined(ctx context.Context, req store.Request) (store.Grant, error) {
	p := s.client.Pipeline()
	set := p.SetNX(ctx, req.Key, req.Token, roundUp(req.TTL))
	get := p.Get(ctx, req.Key)
	pttl := p.PTTL(ctx, req.Key)
	wait := s.ack.queue(ctx, p)
	_, _ = p.Exec(ctx)
	// GET fails harmlessly when the key is missing (redis.Nil) or is a
	// reentrant hash (WRONGTYPE): neither holds our token.
	if err := cmp.Or(set.Err(), pttl.Err()); err != nil {
		return store.Grant{}, acquireError(err)
	}
	if set.Val() {
		if err := s.ack.confirm(wait, true); err != nil {
			return store.Grant{}, err
		}
		return store.Grant{Acquired: true, TTL: roundUp(req.TTL), Holds: 1}, nil
	}
	// go-redis keeps PTTL's -1 and -2 as nanoseconds, the rest as
	// milliseconds.
	ms := int64(pttl.Val())
	if ms >= 0 {
		ms = int64(pttl.Val() / time.Millisecond)
	}
	// Our own token: this is a retry of a command whose reply was lost
	// (go-redis retries after network errors). The key is ours.
	if get.Val() == req.Token && ms > 0 {
		// This call wrote nothing, so its WAIT cannot vouch for the
		// earlier write: Acquire has it confirmed (errUnvouched).
		g := store.Grant{Acquired: true, TTL: time.Duration(ms) * time.Millisecond, Holds: 1}
		return g, s.ack.confirm(wait, false)
	}
	return store.Grant{Remaining: remaining(ms)}, nil
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
	keys := []string{req.Key}
	if req.Fence {
		keys = append(keys, store.FenceKey(req.Key))
	}
	args := []any{req.Token, millis(req.TTL), flag(req.Fence), flag(req.Reentrant), millis(s.fenceTTL)}
	run, wait := s.ack.eval(ctx, s.client, acquireScript, keys, args...)
	res, err := run.Int64Slice()
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
	n, err := releaseScript.Run(ctx, s.client, []string{key}, token, channel(key)).Int64()
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
	n, err := extendScript.Run(ctx, s.client, []string{key}, token, millis(ttl)).Int64()
	if err != nil {
		return 0, callError("extend", err)
	}
	return outcome("extend", n)
}

func outcome(op string, n int64) (store.Outcome, error) {
	switch n {
	case replyOK:
		return store.OK, nil
	case replyHeldByOther:
		return store.HeldByOther, nil
	case replyGone:
		return store.Gone, nil
	case replyStillHeld:
		if op == "release" {
			return store.StillHeld, nil
		}
	}
	return 0, fmt.Errorf("redisstore: %s: unexpected script reply %d", op, n)
}

// errInvalid is wrapped by every argument error so that callers can match
// store.ErrInvalid.
var errInvalid = store.ErrInvalid

func checkRequest(key, token string, ttl time.Duration) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: redisstore: empty key", errInvalid)
	case token == "":
		return fmt.Errorf("%w: redisstore: empty token", errInvalid)
	case token == hashFenceField:
		return fmt.Errorf("%w: redisstore: token %q is reserved", errInvalid, token)
	case ttl <= 0:
		return fmt.Errorf("%w: redisstore: ttl %v is not positive", errInvalid, ttl)
	}
	return nil
}

// roundUp rounds a positive duration up to a whole millisecond, the
// resolution of PX and PEXPIRE. It saturates instead of overflowing: a
// duration within a millisecond of the largest time.Duration (about 292
// years) becomes the largest whole millisecond below it, ttlCeiling.
func roundUp(d time.Duration) time.Duration {
	ms := d / time.Millisecond
	if d%time.Millisecond > 0 {
		ms++
	}
	return min(ms, ttlCeiling/time.Millisecond) * time.Millisecond
}

func millis(d time.Duration) int64 { return int64(roundUp(d) / time.Millisecond) }

// remaining turns a PTTL into Grant.Remaining: -1 for a key without expiry,
// and at least 1ms otherwise (a key that expired between the SET and the
// PTTL, PTTL -2, is reported as free in 1ms). A PTTL beyond what a
// time.Duration holds (a key written by something else with a longer PX)
// saturates at ttlCeiling.
func remaining(pttlMillis int64) time.Duration {
	switch {
	case pttlMillis == -1:
		return -1
	case pttlMillis < 1:
		return time.Millisecond
	case pttlMillis > int64(ttlCeiling/time.Millisecond):
		return ttlCeiling
	}
	return time.Duration(pttlMillis) * time.Millisecond
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// channel is the Pub/Sub channel the release script publishes on when it
// frees key.
func channel(key string) string { return key + ":released" }
