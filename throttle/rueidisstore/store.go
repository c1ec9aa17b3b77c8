package rueidisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-throttle/throttle/internal/redislua"
	"github.com/go-throttle/throttle/throttle/store"
)

// Store is a throttle.Store, store.Notifier, store.Quota and store.Recorder
// on one Redis deployment through a rueidis client. It is safe for
// concurrent use; make one per client and share it.
type Store struct {
	client   rueidis.Client
	fenceTTL string // milliseconds, as the acquire script takes it

	// px caches the last TTL argument formatted for SET PX: a Limiter
	// asks with one TTL, so this saves formatting (and allocating) the
	// same number on every acquisition.
	px atomic.Pointer[pxArg]

	// getOnSet is cleared when the server refuses SET NX with GET (Redis
	// before 7.0): plain acquisitions then use the older pipeline.
	getOnSet atomic.Bool

	// quotaNow, set only by tests, gives the GCRA script the time instead
	// of the server's TIME.
	quotaNow func() time.Time

	// returning estimates how often quota charges find their key already
	// there, which decides whether a charge first tries SET NX (setFirst);
	// quotaScripted, set only by tests, makes every charge run the script.
	returning     redislua.Share
	quotaScripted bool

	watch watcher
}

// pxArg is a TTL in whole milliseconds and its decimal form.
type pxArg struct {
	ms  int64
	arg string
}

var (
	_ store.Store    = (*Store)(nil)
	_ store.Notifier = (*Store)(nil)
	_ store.Quota    = (*Store)(nil)
	_ store.Recorder = (*Store)(nil)
)

// New returns a Store on client, which may be made by rueidis.NewClient for
// one server, a Redis Cluster (several InitAddress entries, or
// ShuffleInit) or Sentinel (ClientOption.Sentinel): every command the store
// sends touches keys of one Cluster hash slot. It panics when client is
// nil.
//
// The store does not own the client: Close stops the store's watches and
// leaves the client open. Keep rueidis's automatic pipelining on (the
// default) — it is the reason to pick this store; see the package
// documentation.
func New(client rueidis.Client, opts ...Option) *Store {
	if client == nil {
		panic("rueidisstore: New needs a non-nil client")
	}
	c := config{fenceTTL: DefaultFenceTTL, watchTimeout: DefaultWatchTimeout}
	for _, o := range opts {
		o(&c)
	}
	s := &Store{client: client, fenceTTL: strconv.FormatInt(millis(c.fenceTTL), 10)}
	s.getOnSet.Store(true)
	s.watch.init(s, c.watchTimeout)
	return s
}

// Close ends the store's watches (their waiters fall back to polling) and
// waits for the goroutines that serve them. It is idempotent; the store
// keeps serving every other call after it, and the client stays open.
func (s *Store) Close() error { return s.watch.close() }

// Acquire takes req.Key in one round trip (see the package documentation
// for the data model). A key that somebody else holds is not an error: the
// grant reports how long they keep it.
//
// A plain request (neither fenced nor reentrant) is one SET key token NX PX
// ttl GET, which Redis 7.0 and later run as cheaply as a bare SET NX; only a
// refused one asks for the holder's PTTL with a second command. Fenced and
// reentrant requests run the acquire script.
func (s *Store) Acquire(ctx context.Context, req store.Request) (store.Grant, error) {
	if err := checkRequest(req.Key, req.Token, req.TTL); err != nil {
		return store.Grant{}, err
	}
	if req.Fence || req.Reentrant {
		return s.acquireScripted(ctx, req)
	}
	if s.getOnSet.Load() {
		g, err := s.acquireSetGet(ctx, req)
		if !isSyntaxError(err) {
			return g, err
		}
		// Redis before 7.0 refuses NX with GET and has written nothing.
		s.getOnSet.Store(false)
	}
	return s.acquirePipelined(ctx, req)
}

// acquireSetGet sends SET key token NX PX ttl GET. Its reply is nil when
// the key was free and is now ours, and the holder's value (SET writes
// nothing) when it is held. A hash (a reentrant lock) makes Redis answer
// WRONGTYPE, again writing nothing: held by somebody else.
func (s *Store) acquireSetGet(ctx context.Context, req store.Request) (store.Grant, error) {
	ms, px := s.pxFor(req.TTL)
	// The typed builder would format the TTL on every call; Arbitrary
	// takes the cached string (Keys still routes it by hash slot).
	cmd := s.client.B().Arbitrary("SET").Keys(req.Key).Args(req.Token, "NX", "GET", "PX", px).Build()
	holder, err := s.client.Do(ctx, cmd).ToString()
	switch {
	case rueidis.IsRedisNil(err):
		return store.Grant{Acquired: true, TTL: time.Duration(ms) * time.Millisecond, Holds: 1}, nil
	case isWrongType(err):
	case err != nil:
		return store.Grant{}, acquireError(err)
	}
	pttl, err := s.client.Do(ctx, s.client.B().Pttl().Key(req.Key).Build()).AsInt64()
	if err != nil {
		return store.Grant{}, acquireError(err)
	}
	// Our own token: this is a retry of a command whose reply was lost.
	// The key is ours as it stands.
	if holder == req.Token && pttl > 0 {
		return store.Grant{Acquired: true, TTL: time.Duration(pttl) * time.Millisecond, Holds: 1}, nil
	}
	return store.Grant{Remaining: remaining(pttl)}, nil
}

// acquirePipelined is the plain acquisition for servers older than Redis
// 7.0: SET key token NX PX ttl, GET key and PTTL key in one pipeline, one
// round trip. GET fails harmlessly on a reentrant hash (WRONGTYPE): that
// holds no token of ours.
func (s *Store) acquirePipelined(ctx context.Context, req store.Request) (store.Grant, error) {
	ms, px := s.pxFor(req.TTL)
	b := s.client.B()
	res := s.client.DoMulti(ctx,
		b.Arbitrary("SET").Keys(req.Key).Args(req.Token, "NX", "PX", px).Build(),
		b.Get().Key(req.Key).Build(),
		b.Pttl().Key(req.Key).Build())
	set, get, ttl := res[0], res[1], res[2]
	err := set.Error()
	if rueidis.IsRedisNil(err) {
		err = nil // NX refused
	}
	if err == nil {
		err = ttl.Error()
	}
	if err != nil {
		return store.Grant{}, acquireError(err)
	}
	if set.Error() == nil {
		return store.Grant{Acquired: true, TTL: time.Duration(ms) * time.Millisecond, Holds: 1}, nil
	}
	pttl, _ := ttl.AsInt64()
	if holder, _ := get.ToString(); holder == req.Token && pttl > 0 {
		return store.Grant{Acquired: true, TTL: time.Duration(pttl) * time.Millisecond, Holds: 1}, nil
	}
	return store.Grant{Remaining: remaining(pttl)}, nil
}

// acquireScripted runs the acquire script, for fenced and reentrant
// requests.
func (s *Store) acquireScripted(ctx context.Context, req store.Request) (store.Grant, error) {
	// The fence counter is passed only when the script may touch it: a
	// script on one key keeps working while its Cluster slot migrates.
	keys := []string{req.Key}
	if req.Fence {
		keys = append(keys, store.FenceKey(req.Key))
	}
	_, px := s.pxFor(req.TTL)
	args := []string{req.Token, px, flag(req.Fence), flag(req.Reentrant), s.fenceTTL}
	res, err := acquireScript.Exec(ctx, s.client, keys, args).AsIntSlice()
	if err != nil {
		return store.Grant{}, acquireError(err)
	}
	if len(res) != 4 {
		return store.Grant{}, fmt.Errorf("rueidisstore: acquire: unexpected script reply %v", res)
	}
	if res[0] == 1 {
		return store.Grant{Acquired: true, TTL: time.Duration(res[3]) * time.Millisecond, Fence: res[1], Holds: int(res[2])}, nil
	}
	return store.Grant{Remaining: remaining(res[1])}, nil
}

// Release frees key if token holds it, deletes its record (see Record), and
// publishes on the key's release channel so that Watch wakes the waiters,
// all in one script and one round trip. A reentrant key loses one hold and
// is freed, with its record, at zero.
func (s *Store) Release(ctx context.Context, key, token string) (store.Outcome, error) {
	if err := checkRequest(key, token, time.Millisecond); err != nil {
		return 0, err
	}
	n, err := s.release(ctx, key, token)
	if err != nil {
		return 0, callError("release", err)
	}
	return outcome("release", n)
}

// release runs the release script on the lock and its record. While a
// Cluster slot migrates, Redis refuses a script on two keys that are not
// both on the node asked (TRYAGAIN). A lock without a record is then
// released alone, which is the same step (only the holder writes a record);
// see redisstore's releaser for the full argument.
func (s *Store) release(ctx context.Context, key, token string) (int64, error) {
	args := []string{token, channel(key)}
	n, err := releaseScript.Exec(ctx, s.client, []string{key, store.RecordKey(key)}, args).AsInt64()
	if !slotMoving(err) {
		return n, err
	}
	found, xerr := s.client.Do(ctx, s.client.B().Exists().Key(store.RecordKey(key)).Build()).AsInt64()
	if xerr != nil {
		return 0, xerr
	}
	if found > 0 {
		return 0, fmt.Errorf("the lock and its record are on different nodes while their Cluster slot migrates, "+
			"and cannot be released together before it ends; nothing was released: %w", err)
	}
	return releaseScript.Exec(ctx, s.client, []string{key}, args).AsInt64()
}

// Extend sets key's time to live to ttl if token holds it, in one script and
// one round trip. It does not change a reentrant key's hold count.
func (s *Store) Extend(ctx context.Context, key, token string, ttl time.Duration) (store.Outcome, error) {
	if err := checkRequest(key, token, ttl); err != nil {
		return 0, err
	}
	_, px := s.pxFor(ttl)
	n, err := extendScript.Exec(ctx, s.client, []string{key}, []string{token, px}).AsInt64()
	if err != nil {
		return 0, callError("extend", err)
	}
	return outcome("extend", n)
}

// pxFor returns ttl rounded up to whole milliseconds, as a number and as
// the decimal argument of PX, from the one-entry cache when it matches.
func (s *Store) pxFor(ttl time.Duration) (int64, string) {
	ms := millis(ttl)
	if c := s.px.Load(); c != nil && c.ms == ms {
		return ms, c.arg
	}
	c := &pxArg{ms: ms, arg: strconv.FormatInt(ms, 10)}
	s.px.Store(c)
	return ms, c.arg
}

func outcome(op string, n int64) (store.Outcome, error) {
	if out, ok := redislua.Outcome(n, op == "release"); ok {
		return out, nil
	}
	return 0, fmt.Errorf("rueidisstore: %s: unexpected script reply %d", op, n)
}

// acquireError wraps an error of an acquisition (see callError).
func acquireError(err error) error { return callError("acquire", err) }

// callError wraps an error of a store call, marking those that surely
// changed nothing in Redis (no connection could be made, the client is
// closed) with store.ErrNotApplied: the Limiter then does not try to free a
// key the command never took.
func callError(op string, err error) error {
	var nerr *net.OpError
	if (errors.As(err, &nerr) && nerr.Op == "dial") || errors.Is(err, rueidis.ErrClosing) {
		return fmt.Errorf("rueidisstore: %s: %w: %w", op, store.ErrNotApplied, err)
	}
	return fmt.Errorf("rueidisstore: %s: %w", op, err)
}

// isSyntaxError reports whether err is Redis refusing a command's syntax
// ("ERR syntax error", which rueidis reports without its "ERR"), as Redis
// before 7.0 refuses SET with both NX and GET.
func isSyntaxError(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	return ok && strings.Contains(re.Error(), "syntax error")
}

// isWrongType reports whether err is Redis's WRONGTYPE reply.
func isWrongType(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	return ok && strings.HasPrefix(re.Error(), "WRONGTYPE")
}

// slotMoving reports whether err is Redis refusing a command on several keys
// of a Cluster slot that is migrating (TRYAGAIN, or an ASK redirection the
// client stopped following).
func slotMoving(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	if !ok {
		return false
	}
	_, ask := re.IsAsk()
	return re.IsTryAgain() || ask
}

func checkRequest(key, token string, ttl time.Duration) error {
	return redislua.CheckRequest("rueidisstore", key, token, ttl)
}

// millis and remaining are redisstore's rules for TTLs and PTTLs.
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

// channel is the Pub/Sub channel the release and record scripts publish on.
func channel(key string) string { return key + ":released" }
