package redisalgo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/go-throttle/throttle/internal/redislua"
	"github.com/go-throttle/throttle/throttle/store"
)

// The scripts, sent by SHA1 (see Conn.Eval).
var (
	acquireScript = NewScript(redislua.Acquire)
	releaseScript = NewScript(redislua.Release)
	extendScript  = NewScript(redislua.Extend)
	recordScript  = NewScript(redislua.Record)
	gcraScript    = NewScript(redislua.GCRA)
	gcraMsScript  = NewScript(redislua.GCRAMillis)
)

// Scripts returns every script by the name of its file, for the test that
// checks their SHA1s against SCRIPT LOAD.
func Scripts() map[string]*Script {
	return map[string]*Script{
		"acquire": acquireScript, "release": releaseScript, "extend": extendScript,
		"record": recordScript, "gcra": gcraScript, "gcra_ms": gcraMsScript,
	}
}

// Store is a store.Store, store.Notifier, store.Quota and store.Recorder on
// one Redis deployment, reached through a Conn. It is safe for concurrent
// use; make one per client and share it. Close stops its background work
// (Watch's connection, the start-up check) and leaves the client open.
type Store struct {
	name    string // the public package, in errors and logs
	conn    Conn
	fenceMs string
	cfg     config

	// refusals estimates how often plain acquisitions find their key held,
	// returning how often quota charges find their key: each picks the
	// cheaper of two ways to the same answer (see Share).
	refusals, returning redislua.Share

	watch watcher
}

// New returns a Store named name (its package) on conn. It panics when
// WithReplicaAck is set and conn is no Waiter.
func New(name string, conn Conn, opts ...Option) *Store {
	c := config{fenceTTL: 24 * time.Hour, watchTimeout: time.Second}
	for _, o := range opts {
		o(&c)
	}
	if _, ok := conn.(Waiter); c.replicas > 0 && !ok {
		panic(name + ": WithReplicaAck needs a client that sends WAIT on the connection that wrote " +
			"(a *redis.Client, standalone or Sentinel), not a Cluster client")
	}
	s := &Store{name: name, conn: conn, cfg: c, fenceMs: strconv.FormatInt(redislua.Millis(c.fenceTTL), 10)}
	s.watch.init(s)
	s.checkEviction()
	return s
}

// Logger returns the logger opts configure.
func Logger(opts ...Option) *slog.Logger {
	var c config
	for _, o := range opts {
		o(&c)
	}
	return c.logger()
}

// Close stops the store's background goroutines and waits for them, at most
// twice the watch timeout; open watches are woken no more. It is idempotent,
// and the store keeps serving every other call after it.
func (s *Store) Close() error { return s.watch.close() }

// Acquire takes req.Key in one round trip: SET NX PX for a plain request
// (with GET and PTTL in the same round trip while refusals are frequent;
// otherwise a refusal asks the acquire script who holds the key, a second
// one), the acquire script for a fenced or reentrant one.
func (s *Store) Acquire(ctx context.Context, req store.Request) (store.Grant, error) {
	if err := s.check(req.Key, req.Token, req.TTL); err != nil {
		return store.Grant{}, err
	}
	ms := redislua.Millis(req.TTL)
	switch {
	case s.cfg.replicas > 0:
		return s.acquireAcked(ctx, req, ms)
	case req.Fence || req.Reentrant || s.cfg.path == Scripted:
		return s.acquireScript(ctx, req, ms, true)
	}
	lookup := s.cfg.path == Lookup || s.cfg.path == Auto && s.refusals.Frequent()
	set, holder, pttl, err := s.conn.SetNX(ctx, req.Key, req.Token, ms, lookup)
	if err != nil {
		return store.Grant{}, s.fail("acquire", err, true)
	}
	s.refusals.Observe(!set)
	switch {
	case set:
		return store.Grant{Acquired: true, TTL: millis(ms), Holds: 1}, nil
	case !lookup:
		// The script tells the holder and its PTTL, and takes the key if
		// it expired meanwhile.
		return s.acquireScript(ctx, req, ms, false)
	case holder == req.Token && pttl > 0:
		// A retry of ours (the client resent a SET whose reply was lost)
		// took the key: it is ours as it stands.
		return store.Grant{Acquired: true, TTL: millis(pttl), Holds: 1}, nil
	}
	return store.Grant{Remaining: redislua.Remaining(pttl)}, nil
}

// acquireArgs returns the acquire script's keys and arguments. The fence
// counter is passed only when fenced: a script on one key keeps working
// while its Cluster slot migrates.
func (s *Store) acquireArgs(req store.Request, ms int64) ([]string, []string) {
	keys := []string{req.Key}
	if req.Fence {
		keys = append(keys, store.FenceKey(req.Key))
	}
	return keys, []string{req.Token, strconv.FormatInt(ms, 10), flag(req.Fence), flag(req.Reentrant), s.fenceMs}
}

// acquireScript runs the acquire script. An error is marked not applied
// only when first: after a refused SET, the key may be ours already.
func (s *Store) acquireScript(ctx context.Context, req store.Request, ms int64, first bool) (store.Grant, error) {
	keys, args := s.acquireArgs(req, ms)
	res, err := s.conn.Eval(ctx, acquireScript, keys, args...)
	if err != nil {
		return store.Grant{}, s.fail("acquire", err, first)
	}
	return s.grant(res)
}

// grant decodes the acquire script's reply {acquired, fence or pttl, holds, pttl}.
func (s *Store) grant(res []int64) (store.Grant, error) {
	switch {
	case len(res) != 4:
		return store.Grant{}, fmt.Errorf("%s: acquire: unexpected script reply %v", s.name, res)
	case res[0] != 1:
		return store.Grant{Remaining: redislua.Remaining(res[1])}, nil
	}
	return store.Grant{Acquired: true, TTL: millis(res[3]), Fence: res[1], Holds: int(res[2])}, nil
}

// Release frees key if token holds it and deletes its record, then
// publishes on the key's release channel, all in one script.
func (s *Store) Release(ctx context.Context, key, token string) (store.Outcome, error) {
	if err := s.check(key, token, 1); err != nil {
		return 0, err
	}
	res, err := s.conn.Eval(ctx, releaseScript, []string{key, store.RecordKey(key)}, token, channel(key))
	if err != nil && s.conn.Kind(err) == SlotMoving {
		res, err = s.releaseMoving(ctx, key, token, err)
	}
	return s.outcome("release", res, err)
}

// releaseMoving releases key while its Cluster slot migrates, when Redis
// refused the script on the lock and its record because they are not both
// on the node asked. Without a record the lock alone is the same step (only
// the holder writes a record); with one nothing can free both before the
// migration ends, and nothing is released.
func (s *Store) releaseMoving(ctx context.Context, key, token string, moving error) ([]int64, error) {
	_, found, err := s.conn.Get(ctx, store.RecordKey(key))
	switch {
	case err != nil:
		return nil, err
	case found:
		return nil, fmt.Errorf("the lock and its record are on different nodes while their Cluster slot "+
			"migrates, and cannot be released together before it ends; nothing was released: %w", moving)
	}
	return s.conn.Eval(ctx, releaseScript, []string{key}, token, channel(key))
}

// Extend sets key's time to live to ttl if token holds it (a reentrant key's
// is raised, never lowered), in one script.
func (s *Store) Extend(ctx context.Context, key, token string, ttl time.Duration) (store.Outcome, error) {
	if err := s.check(key, token, ttl); err != nil {
		return 0, err
	}
	res, err := s.conn.Eval(ctx, extendScript, []string{key}, token, strconv.FormatInt(redislua.Millis(ttl), 10))
	return s.outcome("extend", res, err)
}

// Record stores rec as key's record if token holds key, expiring at the
// lock's very millisecond (PEXPIRETIME, Redis 7.0), and wakes the key's
// watchers, in one script. While a Cluster slot migrates it fails, having
// written nothing.
func (s *Store) Record(ctx context.Context, key, token string, rec []byte) (store.Outcome, error) {
	if err := s.check(key, token, 1); err != nil {
		return 0, err
	}
	res, err := s.conn.Eval(ctx, recordScript, []string{key, store.RecordKey(key)}, token, string(rec), channel(key))
	return s.outcome("record", res, err)
}

// Recorded returns key's record with one GET.
func (s *Store) Recorded(ctx context.Context, key string) ([]byte, bool, error) {
	if key == "" {
		return nil, false, s.check(key, "-", 1)
	}
	rec, found, err := s.conn.Get(ctx, store.RecordKey(key))
	if err != nil {
		return nil, false, s.fail("recorded", err, true)
	}
	return rec, found, nil
}

func (s *Store) outcome(op string, res []int64, err error) (store.Outcome, error) {
	if err != nil {
		return 0, s.fail(op, err, true)
	}
	if len(res) == 1 {
		if out, ok := redislua.Outcome(res[0], op == "release"); ok {
			return out, nil
		}
	}
	return 0, fmt.Errorf("%s: %s: unexpected script reply %v", s.name, op, res)
}

// fail wraps an error of a call, marking with store.ErrNotApplied those
// that surely changed nothing (when mark), so that the Limiter neither frees
// a key the call never took nor keeps asking a server that refuses.
func (s *Store) fail(op string, err error, mark bool) error {
	var nerr *net.OpError
	if mark && (s.conn.Kind(err) == NotApplied || errors.As(err, &nerr) && nerr.Op == "dial") {
		return fmt.Errorf("%s: %s: %w: %w", s.name, op, store.ErrNotApplied, err)
	}
	return fmt.Errorf("%s: %s: %w", s.name, op, err)
}

func (s *Store) check(key, token string, ttl time.Duration) error {
	return redislua.CheckRequest(s.name, key, token, ttl)
}

func millis(ms int64) time.Duration {
	return time.Duration(min(ms, int64(redislua.TTLCeiling/time.Millisecond))) * time.Millisecond
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// channel is the Pub/Sub channel the release and record scripts publish on.
func channel(key string) string { return key + ":released" }
