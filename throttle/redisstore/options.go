package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of the options.
const (
	// DefaultFenceTTL is how long a key's fencing counter is kept after the
	// last fenced acquisition of the key. A day is far longer than any lock
	// TTL, so a counter normally outlives every lease it numbered; see the
	// package documentation for why fences still only increase after it
	// expired.
	DefaultFenceTTL = 24 * time.Hour

	// DefaultWatchTimeout bounds how long Watch waits for Redis to confirm
	// a subscription before it reports an error (and the Limiter falls
	// back to polling).
	DefaultWatchTimeout = time.Second

	// DefaultReplicaAckTimeout is how long an acquisition waits for replica
	// acknowledgements (WithReplicaAck) when no timeout is given: half the
	// default throttle.Policy.Timeout, so that a missing replica ends the
	// call with ErrNotReplicated rather than with the Limiter's deadline.
	DefaultReplicaAckTimeout = 50 * time.Millisecond
)

// minFenceTTL is the shortest fence TTL: shorter would let a counter expire
// while the lease it numbered is still held.
const minFenceTTL = time.Second

// Option configures a Store made by New.
type Option func(*config)

type config struct {
	fenceTTL     time.Duration
	watchTimeout time.Duration
	logger       *slog.Logger
	ack          replicaAck
}

// WithFenceTTL sets how long a key's fencing counter is kept after the last
// fenced acquisition of the key (default DefaultFenceTTL). Shorter keeps
// fewer idle counters; the counter restarts from the server clock once it
// expired, so a TTL well above the longest lock TTL loses nothing. d <= 0
// means the default; values below one second are raised to one second.
// memstore.WithFenceTTL means the same.
func WithFenceTTL(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			d = DefaultFenceTTL
		}
		c.fenceTTL = max(d, minFenceTTL)
	}
}

// WithWatchTimeout bounds how long Watch waits for Redis to confirm a
// subscription (default DefaultWatchTimeout). Watch also returns when its
// context ends. It also bounds each call the store makes in the background
// (subscribing, reconnecting the subscription, the start-up check of
// maxmemory-policy), and Close waits at most twice as long for them to stop.
// d <= 0 means the default.
func WithWatchTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			d = DefaultWatchTimeout
		}
		c.watchTimeout = d
	}
}

// WithLogger sets the logger of the store's few log lines: the warnings
// New and its start-up check give about the client's or the server's
// configuration. nil, the default, means slog.Default() at the moment of
// logging. The store does not touch go-redis's own logger (see the package
// documentation).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// log returns the configured logger or, when there is none,
// slog.Default() of the moment.
func (c *config) log() *slog.Logger {
	if c.logger != nil {
		return c.logger
	}
	return slog.Default()
}

// ErrNotReplicated is matched (errors.Is) by the error of an acquisition
// that took the key on the master but that fewer replicas than
// WithReplicaAck asks for acknowledged in time. The store releases the key
// again before it returns; when that release succeeded, the error also
// matches store.ErrNotApplied, as the call leaves nothing held.
var ErrNotReplicated = errors.New("redisstore: too few replicas acknowledged the lock")

// WithReplicaAck makes every acquisition that takes a key wait until at
// least replicas replicas have acknowledged it, with Redis's
// WAIT replicas timeout, before the store reports the grant. It narrows the
// window in which a failover loses a lock: Redis replicates asynchronously,
// so without it a master can grant a lock, die before any replica has it,
// and the promoted replica grants the same key to somebody else.
//
// How: WAIT rides in the acquisition's own round trip, after the commands
// that take the key, on the same connection (WAIT counts the replicas that
// have everything the connection wrote so far): a plain acquisition always
// sends the pipeline SET NX PX, GET, PTTL, WAIT (never SET alone, see the
// package documentation on round trips), and the acquire script is sent as
// a pipeline of EVALSHA and WAIT.
//
// When fewer replicas answered within timeout, or WAIT failed, the grant
// is not reported: the store releases the key (token-checked, one more
// round trip) and returns an error matching ErrNotReplicated, so that the
// Limiter's Policy.WhenStoreFails decides the request (FailOpen admits it
// unguarded, FailClosed turns it away, FailOver uses the fallback) exactly
// as when Redis is unreachable. Reporting the key as held instead would
// invent a holder and a Retry-After; reporting it granted is what the
// option exists to avoid.
//
// A plain acquisition that finds the key held by its own token (go-redis
// retried a command whose reply was lost, maybe on another connection)
// wrote nothing this time, so its WAIT proves nothing about the earlier
// write. The store then rewrites the key's TTL with what is left of it
// (token-checked, as Extend does) followed by WAIT, one more round trip:
// replicas that have this write have the earlier one too.
//
// The cost: one more command in the same round trip, but its reply comes
// only once the replicas have acknowledged, so every acquisition takes a
// master-to-replica round trip longer: on one two-core host about 0.1 ms
// for a lone caller, and 1.5 to 2 times the time per acquisition with 16
// concurrent callers (BenchmarkReplicaAck). A rejected acquisition writes
// nothing and its WAIT normally returns at once, but while fewer than
// replicas replicas are connected every acquisition, granted or not, waits
// the full timeout. Keep timeout well below throttle.Policy.Timeout (default
// 100 ms), or the Limiter's deadline ends the call first and the outcome
// is a plain store error.
//
// What it guarantees: a grant the store reports was, when reported, in the
// memory of at least replicas replicas. With one replica and replicas = 1,
// Sentinel promotes a node that has the lock when the master dies after
// the grant. What it does not: WAIT does not make Redis strongly
// consistent. A failover can still promote a replica that missed the write
// (with several replicas, one of those that did not acknowledge; or an
// acknowledging replica that restarted without persistence), a master
// that restarts empty loses every lock, and Release and Extend are not
// waited for (a lost release leaves the key to expire; a lost extension
// lets it expire at its previous deadline). Use fencing tokens where two
// holders would corrupt data.
//
// replicas <= 0 turns the option off (the default). timeout <= 0 means
// DefaultReplicaAckTimeout; it is rounded up to whole milliseconds, WAIT's
// resolution. The option needs a *redis.Client (standalone, with replicas,
// or a Sentinel failover client): on a *redis.ClusterClient go-redis would
// route the key-less WAIT to an arbitrary node, where it proves nothing,
// so New panics.
func WithReplicaAck(replicas int, timeout time.Duration) Option {
	return func(c *config) {
		if replicas <= 0 {
			c.ack = replicaAck{}
			return
		}
		if timeout <= 0 {
			timeout = DefaultReplicaAckTimeout
		}
		c.ack = replicaAck{replicas: replicas, timeout: roundUp(timeout)}
	}
}

// replicaAck is the setting of WithReplicaAck; the zero value is off.
type replicaAck struct {
	replicas int
	timeout  time.Duration
}

// check panics when the option is on and client routes commands by key
// (a Cluster client), where WAIT cannot follow the acquisition's connection.
func (a replicaAck) check(client redis.UniversalClient) {
	if _, ok := client.(*redis.ClusterClient); ok && a.replicas > 0 {
		panic("redisstore: WithReplicaAck needs a *redis.Client (standalone or Sentinel failover): " +
			"a ClusterClient sends the key-less WAIT to an arbitrary node, where it proves nothing")
	}
}

// queue appends WAIT to p when the option is on and returns it; nil when off.
func (a replicaAck) queue(ctx context.Context, p redis.Pipeliner) *redis.IntCmd {
	if a.replicas <= 0 {
		return nil
	}
	w := redis.NewIntCmd(ctx, "wait", a.replicas, a.timeout.Milliseconds())
	_ = p.Process(ctx, w)
	return w
}

// eval runs script as EVALSHA followed by WAIT in one pipeline, so that
// WAIT runs on the connection that wrote, and as EVAL and WAIT once more
// when the server answers NOSCRIPT (redis.Script.Run's fallback). With the
// option off it is script.Run and wait is nil.
func (a replicaAck) eval(ctx context.Context, c redis.UniversalClient, script *redis.Script, keys []string, args ...any) (run *redis.Cmd, wait *redis.IntCmd) {
	if a.replicas <= 0 {
		return script.Run(ctx, c, keys, args...), nil
	}
	for _, load := range []bool{false, true} {
		p := c.Pipeline()
		if load {
			run = script.Eval(ctx, p, keys, args...)
		} else {
			run = script.EvalSha(ctx, p, keys, args...)
		}
		wait = a.queue(ctx, p)
		_, _ = p.Exec(ctx)
		if load || !noScript(run.Err()) {
			break
		}
	}
	return run, wait
}

// errUnvouched is what confirm returns for a grant that this call did not
// write (a retry that found the key held by its own token): WAIT cannot
// tell whether the earlier write reached the replicas, vouch can.
var errUnvouched = errors.New("redisstore: grant written by an earlier attempt")

// confirm returns nil when a grant may be reported: the option is off, or
// the acquisition's own write (written) was acknowledged by enough
// replicas. It returns errUnvouched for a grant the call did not write,
// and otherwise an error wrapping ErrNotReplicated.
func (a replicaAck) confirm(wait *redis.IntCmd, written bool) error {
	if wait == nil {
		return nil
	}
	if !written {
		return errUnvouched
	}
	n, err := wait.Result()
	switch {
	case err != nil:
		return fmt.Errorf("%w: WAIT: %w", ErrNotReplicated, err)
	case n < int64(a.replicas):
		return fmt.Errorf("%w: %d of %d within %v", ErrNotReplicated, n, a.replicas, a.timeout)
	}
	return nil
}

// vouch confirms a plain grant that an earlier attempt wrote: it sets the
// key's TTL to what is left of it, ttl, if token still holds it (the
// extend script), and WAITs after that write. Replication is one ordered
// stream, so replicas that acknowledge this write have the earlier one.
func (a replicaAck) vouch(ctx context.Context, c redis.UniversalClient, key, token string, ttl time.Duration) error {
	run, wait := a.eval(ctx, c, extendScript.Script, []string{key}, token, millis(ttl))
	n, err := run.Int64()
	switch {
	case err != nil:
		return acquireError(err)
	case n != replyOK:
		return fmt.Errorf("%w: the key was lost while its replication was confirmed", ErrNotReplicated)
	}
	return a.confirm(wait, true)
}
