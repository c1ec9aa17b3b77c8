package redisalgo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/throttle/store"
)

// Store is a store.Store, store.Notifier, store.Quota and store.Recorder on
// one Redis deployment, reached through a Conn; it is safe for concurrent use.
type Store struct {
	name                string // the public package, in errors and logs
	conn                Conn
	fenceMs             string
	cfg                 config
	refusals, returning Share // of plain acquisitions, of quota charges
	watch               watcher
	live                storekit.Liveness
	near                near
}

// New returns a Store named name (its package) on conn; it panics when
// WithReplicaAck is set and conn is no Waiter.
func New(name string, conn Conn, opts ...Option) *Store {
	c := configure(opts)
	if _, ok := conn.(Waiter); c.replicas > 0 && !ok {
		panic(name + ": WithReplicaAck needs a client that sends WAIT on the connection that wrote " +
			"(a *redis.Client, standalone or Sentinel), not a Cluster client")
	}
	s := &Store{name: name, conn: conn, cfg: c, fenceMs: strconv.FormatInt(millis(c.fenceTTL), 10)}
	s.watch.init(s)
	s.near.init(s)
	s.checkEviction()
	return s
}

// Close stops the store's background goroutines, waiting at most twice the
// watch timeout. A client the store made (redisstore.Dial) is closed too;
// any other stays open, and the store keeps serving the rest.
func (s *Store) Close() error {
	err := s.watch.close()
	if s.cfg.close != nil {
		err = errors.Join(err, s.cfg.close())
	}
	return err
}

// checkEviction warns once, in the background, unless every master's
// maxmemory-policy is noeviction: any other may drop a lock. New calls it,
// before anybody can Close the store.
func (s *Store) checkEviction() {
	w := &s.watch
	w.running.Go(func() {
		defer close(w.checked)
		ctx, cancel := context.WithTimeout(w.ctx, w.timeout)
		defer cancel()
		found, err := s.conn.Policies(ctx)
		if err != nil {
			s.cfg.log.Debug(s.name+": cannot check maxmemory-policy", "err", err)
		}
		if found = slices.DeleteFunc(found, func(p string) bool { return strings.HasSuffix(p, "noeviction") }); len(found) > 0 {
			slices.Sort(found)
			s.cfg.log.Warn(s.name+": Redis may evict keys when memory runs short, and an evicted lock is "+
				"silently lost (a duplicate gets through): set maxmemory-policy noeviction",
				"maxmemory-policy", strings.Join(found, ","))
		}
	})
}

// Checked returns a channel closed once the start-up check is over (tests).
func Checked(s *Store) <-chan struct{} { return s.watch.checked }

// Acquire takes req.Key in one round trip: SET NX PX, pipelined with GET and
// PTTL while refusals are frequent (else a refusal asks the acquire script),
// or the acquire script for a fenced or reentrant request; a semaphore
// (Holders above 1) is a sorted set that its own script changes.
// A plain refusal that read the holder is remembered in the near cache,
// which answers the next copies until Redis reports that the key changed.
func (s *Store) Acquire(ctx context.Context, req store.Request) (store.Grant, error) {
	if err := storekit.CheckLock(s.name, req.Key, req.Token, req.TTL); err != nil {
		return store.Grant{}, err
	}
	if semaphore(req) || req.Reentrant || s.cfg.replicas > 0 {
		g, _, err := s.acquire(ctx, req)
		if g.Acquired { // a holder's acquisition may change the key's TTL
			s.Forget(req.Key)
		}
		return g, err
	}
	if g, ok := s.Refused(req); ok {
		return g, nil
	}
	st := s.stamp(req.Key)
	g, holder, err := s.acquire(ctx, req)
	if err == nil && !g.Acquired {
		s.keep(req.Key, st, g.Remaining, store.Rate{}, holder)
	}
	return g, err
}

// acquire is Acquire without the near cache; a refusal that read the key
// (SET NX pipelined with GET and PTTL) returns its holder too.
func (s *Store) acquire(ctx context.Context, req store.Request) (store.Grant, string, error) {
	ms := millis(req.TTL)
	switch {
	case s.cfg.replicas > 0:
		return unread(s.acquireAcked(ctx, req, ms))
	case semaphore(req):
		return unread(s.acquireHolders(ctx, req, ms))
	case req.Fence || req.Reentrant || s.cfg.path == "script":
		return unread(s.acquireScript(ctx, req, ms, true))
	}
	lookup := s.cfg.path == "pipeline" || s.cfg.path == "store" && s.refusals.Frequent()
	set, holder, pttl, err := s.conn.SetNX(ctx, req.Key, req.Token, ms, lookup)
	if err != nil {
		return store.Grant{}, "", s.fail("acquire", err, true)
	}
	s.refusals.Observe(!set)
	switch {
	case set:
		return store.Grant{Acquired: true, TTL: duration(ms), Holds: 1}, "", nil
	case !lookup: // the script tells the holder, or takes the key if it expired
		return unread(s.acquireScript(ctx, req, ms, false))
	case holder == req.Token && pttl > 0: // a retry of ours (a reply was lost) took it
		return store.Grant{Acquired: true, TTL: duration(pttl), Holds: 1}, "", nil
	}
	return store.Grant{Remaining: remaining(pttl)}, holder, nil
}

// unread is an answer of acquire that did not read the key's holder.
func unread(g store.Grant, err error) (store.Grant, string, error) { return g, "", err }

// acquireArgs returns the acquire script's keys (the counter only when
// fenced, so that the rest works while a Cluster slot migrates) and args.
func (s *Store) acquireArgs(req store.Request, ms int64) ([]string, []string) {
	keys := []string{req.Key}
	if req.Fence {
		keys = append(keys, storekit.FenceKey(req.Key))
	}
	return keys, []string{req.Token, strconv.FormatInt(ms, 10), flag(req.Fence), flag(req.Reentrant), s.fenceMs}
}

// acquireScript runs the acquire script; after a refused SET (not first) the
// key may be ours already, and an error is never marked not applied.
func (s *Store) acquireScript(ctx context.Context, req store.Request, ms int64, first bool) (store.Grant, error) {
	keys, args := s.acquireArgs(req, ms)
	res, err := s.conn.Eval(ctx, acquireScript, keys, args...)
	if err != nil {
		return store.Grant{}, s.fail("acquire", err, first)
	}
	return s.grant(res)
}

// grant decodes the acquire script's reply (see acquire.lua).
func (s *Store) grant(res []int64) (store.Grant, error) {
	switch {
	case len(res) != 4:
		return store.Grant{}, fmt.Errorf("%s: acquire: unexpected script reply %v", s.name, res)
	case res[0] != 1:
		return store.Grant{Remaining: remaining(res[1])}, nil
	}
	return store.Grant{Acquired: true, TTL: duration(res[3]), Fence: res[1], Holds: int(res[2])}, nil
}

// Release frees key and its record if token holds it (or token's place of a
// semaphore), and publishes on key+":released", in one script.
func (s *Store) Release(ctx context.Context, key, token string) (store.Outcome, error) {
	if err := storekit.CheckLock(s.name, key, token, 1); err != nil {
		return 0, err
	}
	defer s.Forget(key)
	// The key's two names in one string, keys and args in a pooled array:
	// one allocation, not five.
	names := key + ":record" + key + ":released"
	n := len(key) + len(":record")
	v := releaseArgs.Get().(*[4]string)
	*v = [4]string{key, names[:n], token, names[n:]} // storekit.RecordKey(key), channel(key)
	res, err := s.conn.Eval(ctx, releaseScript, v[:2], v[2:]...)
	*v = [4]string{}
	releaseArgs.Put(v)
	if err != nil && (strings.HasPrefix(err.Error(), "TRYAGAIN") || strings.HasPrefix(err.Error(), "ASK ")) {
		res, err = s.releaseMoving(ctx, key, token, err)
	}
	return s.result("release", res, err)
}

// releaseArgs are the arrays of Release's keys and args (Conn.Eval keeps
// neither slice).
var releaseArgs = sync.Pool{New: func() any { return new([4]string) }}

// releaseMoving releases a lock whose Cluster slot migrates (TRYAGAIN, ASK)
// alone, unless its record, maybe on the other node, exists.
func (s *Store) releaseMoving(ctx context.Context, key, token string, moving error) ([]int64, error) {
	_, found, err := s.conn.Get(ctx, storekit.RecordKey(key))
	switch {
	case err != nil:
		return nil, err
	case found:
		return nil, fmt.Errorf("the lock and its record are on different nodes while their Cluster slot "+
			"migrates, and cannot be released together before it ends; nothing was released: %w", moving)
	}
	return s.conn.Eval(ctx, releaseScript, []string{key}, token, channel(key))
}

// Extend sets key's TTL if token holds it (raising a reentrant key's only),
// or the time of token's place of a semaphore.
func (s *Store) Extend(ctx context.Context, key, token string, ttl time.Duration) (store.Outcome, error) {
	if err := storekit.CheckLock(s.name, key, token, ttl); err != nil {
		return 0, err
	}
	defer s.Forget(key) // the key's TTL changes
	res, err := s.conn.Eval(ctx, extendScript, []string{key}, token, strconv.FormatInt(millis(ttl), 10))
	return s.result("extend", res, err)
}

// Record stores rec as key's record and sets key's TTL to ttl if token
// holds key, the record expiring with the lock (PEXPIRETIME, Redis 7.0),
// and wakes the key's watchers, in one script.
func (s *Store) Record(ctx context.Context, key, token string, rec []byte, ttl time.Duration) (store.Outcome, error) {
	if err := storekit.CheckLock(s.name, key, token, ttl); err != nil {
		return 0, err
	}
	defer s.Forget(key)
	res, err := s.conn.Eval(ctx, recordScript, []string{key, storekit.RecordKey(key)}, token, string(rec), channel(key),
		strconv.FormatInt(millis(ttl), 10))
	return s.result("record", res, err)
}

// Recorded returns key's record with one GET.
func (s *Store) Recorded(ctx context.Context, key string) ([]byte, bool, error) {
	if key == "" {
		return nil, false, storekit.CheckLock(s.name, key, "-", 1)
	}
	rec, found, err := s.conn.Get(ctx, storekit.RecordKey(key))
	if err != nil {
		return nil, false, s.fail("recorded", err, true)
	}
	return rec, found, nil
}

func (s *Store) result(op string, res []int64, err error) (store.Outcome, error) {
	if err != nil {
		return 0, s.fail(op, err, true)
	}
	if len(res) == 1 {
		if out, ok := outcome(res[0], op == "release"); ok {
			return out, nil
		}
	}
	return 0, fmt.Errorf("%s: %s: unexpected script reply %v", s.name, op, res)
}

// fail wraps an error of a call, marking those that surely changed nothing
// (when mark) with store.ErrNotApplied: the limiter then frees nothing.
func (s *Store) fail(op string, err error, mark bool) error {
	if mark && s.conn.Unsent(err) {
		return fmt.Errorf("%s: %s: %w: %w", s.name, op, store.ErrNotApplied, err)
	}
	return fmt.Errorf("%s: %s: %w", s.name, op, err)
}

func flag(b bool) string { return map[bool]string{true: "1", false: "0"}[b] }

func channel(key string) string { return key + ":released" }

// Share is a moving average, in units of 1/65536, of how many calls had some
// outcome, each new call weighing 1/16: the store picks by it the cheaper of
// two ways to one answer. Two updates at once may lose a sample.
type Share struct{ v atomic.Int32 }

// shareFrequent is one call in eight: from about there, paying a pipeline or
// a script every time beats paying a second round trip for the outcome.
const shareOne, shareFrequent = 1 << 16, 1 << 13

// Observe adds one call, with the outcome or not.
func (s *Share) Observe(outcome bool) {
	var sample int32
	if outcome {
		sample = shareOne
	}
	old := s.v.Load()
	s.v.Store(old + (sample-old)>>4) // rounds down, to exactly 0 after a run without
}

// Frequent reports whether one call in eight or more had the outcome lately.
func (s *Share) Frequent() bool { return s.v.Load() >= shareFrequent }
