package adaptertest

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
)

var created = []byte(`{"ok":true}` + "\n")

// benchHandler is the guarded handler: 201 with a small body.
var benchHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(created)
})

// The fixed rejection fixedRejection writes: the fields and body guard.Write
// writes for a duplicate of "submit" held 5 s more.
var (
	fixedRetryAfter = []string{"5"}
	fixedPolicy     = []string{`"submit";q=1;w=5`}
	fixedLimit      = []string{`"submit";r=0;t=5`}
	fixedType       = []string{"application/problem+json"}
	fixedNoStore    = []string{"no-store"}
	fixedNoSniff    = []string{"nosniff"}
	fixedBody       = []byte(`{"type":"about:blank","title":"Too Many Requests","status":429,"detail":"This request duplicates one made moments ago; retry after 5 seconds."}` + "\n")
)

// fixedRejection answers every request as the middleware answers a
// duplicate, from constants: the framework's share of a rejection, its
// writer and six header fields, without the throttle's.
var fixedRejection = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h["Retry-After"] = fixedRetryAfter
	h["Ratelimit-Policy"] = fixedPolicy
	h["Ratelimit"] = fixedLimit
	h["Content-Type"] = fixedType
	h["Cache-Control"] = fixedNoStore
	h["X-Content-Type-Options"] = fixedNoSniff
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write(fixedBody)
})

// Bench measures the middleware's cost per request against the bare
// engine and against a middleware that does nothing. Every case serves
// b.N requests on one goroutine (concurrency 1; run with -cpu 1) through
// one reused request and writer (see DriveWith), with a memory store. The
// identity is the client IP (keyfuncs.RemoteIP over RemoteAddr) or the
// user (keyfuncs.Header over X-User-ID):
//
//   - bare: the engine and handler without any middleware, a new client
//     IP per request (what the harness and engine cost);
//   - noop-middleware: the same behind a framework middleware that only
//     calls the next handler (what any middleware costs);
//   - noop-middleware-fixed-429: the same with a handler that answers 429
//     with the fields and body of a rejection, from constants (what
//     writing a rejection costs in the framework, the floor under the
//     rejected cases);
//   - admitted-distinct-ips, admitted-distinct-users: a Dedupe lock and
//     a new client IP (user) per request, in a steady state: the TTL is
//     short (steadyWindow), so keys expire as fast as new ones arrive and
//     the store holds a few ten thousand of them, as a server does that
//     admits some ten thousand new clients a second under a 5 s window.
//     The clients are steadyClients addresses (users) taken in turn, each
//     one's key long expired when it comes round again (a request still
//     held would fail the benchmark with 429);
//   - admitted-growing-ips: the same without expiry (5 s TTL), b.N
//     distinct client IPs, so b.N keys are held at the end: the store
//     grows with the run, and its maps' growth is most of the cost
//     (-benchtime 1000000x is the issue's "1M requests, a new client IP per
//     request");
//   - rejected-hot-ip, rejected-hot-user: one client whose key is held, so
//     every request is turned away with 429, Retry-After, the RateLimit
//     fields and a problem body;
//   - quota-65536-users: a Quota of 10000 an hour over 65536 users taken
//     in turn, so every request is admitted and charged, and answered
//     with its RateLimit fields;
//   - quota-2-rates-65536-users: the same users under two rates decided
//     as one (10000 a minute and 100000 a day), listed in one field each;
//   - quota-per-plan-65536-users: one rate chosen per request by a
//     function of the request (a user's plan);
//   - replay-distinct-users: a Replay and b.N distinct users, so
//     every request runs, is captured and recorded (two store calls);
//   - replay-hot-user-replayed: one user whose first answer is recorded,
//     so every request is answered with it (two store calls: the refused
//     acquisition and the read).
func Bench(b *testing.B, a Adapter) {
	addrs, users := DistinctAddrs(steadyClients), DistinctIDs(steadyClients)
	b.Run("bare", func(b *testing.B) {
		DriveWith(b, a.Bare(benchHandler), http.StatusCreated, ByAddr(addrs))
	})
	if a.Noop != nil {
		b.Run("noop-middleware", func(b *testing.B) {
			DriveWith(b, a.Noop(benchHandler), http.StatusCreated, ByAddr(addrs))
		})
		b.Run("noop-middleware-fixed-429", func(b *testing.B) {
			DriveWith(b, a.Noop(fixedRejection), http.StatusTooManyRequests, ByAddr(addrs))
		})
	}
	b.Run("admitted-distinct-ips", func(b *testing.B) {
		DriveWith(b, a.Wrap(steadyGuard(b), keyfuncs.RemoteIP(), benchHandler), http.StatusCreated, ByAddr(addrs))
	})
	b.Run("admitted-distinct-users", func(b *testing.B) {
		Drive(b, a.Wrap(steadyGuard(b), UserKey(), benchHandler), http.StatusCreated, users)
	})
	b.Run("admitted-growing-ips", func(b *testing.B) {
		g := benchGuard(b, b.N)
		DriveWith(b, a.Wrap(g, keyfuncs.RemoteIP(), benchHandler), http.StatusCreated, ByAddr(DistinctAddrs(b.N)))
	})
	b.Run("rejected-hot-ip", func(b *testing.B) {
		h := a.Wrap(benchGuard(b, 1), keyfuncs.RemoteIP(), benchHandler)
		Status(b, Serve(h, Submit("")), http.StatusCreated) // from ClientAddr
		DriveWith(b, h, http.StatusTooManyRequests, ByAddr([]string{ClientAddr + ":1234"}))
	})
	b.Run("rejected-hot-user", func(b *testing.B) {
		h := a.Wrap(benchGuard(b, 1), UserKey(), benchHandler)
		Status(b, Serve(h, Submit("hot")), http.StatusCreated)
		Drive(b, h, http.StatusTooManyRequests, []string{"hot"})
	})
	b.Run("quota-65536-users", func(b *testing.B) {
		q, err := throttle.NewQuota(memstore.New(), throttle.QuotaConfig{Name: "search",
			Options: throttle.Options{Timeout: time.Second}})
		require.NoError(b, err)
		g := guard.Quota(q, throttle.Rate{Limit: 10_000, Window: time.Hour})
		Drive(b, a.Wrap(g, UserKey(), benchHandler), http.StatusCreated, DistinctIDs(1<<16))
	})
	b.Run("quota-2-rates-65536-users", func(b *testing.B) {
		rates := []throttle.Rate{{Name: "minute", Limit: 10_000, Window: time.Minute}, {Name: "day", Limit: 100_000, Window: 24 * time.Hour}}
		Drive(b, a.Wrap(guard.Quota(benchQuota(b), rates), UserKey(), benchHandler), http.StatusCreated, DistinctIDs(1<<16))
	})
	b.Run("quota-per-plan-65536-users", func(b *testing.B) {
		free, pro := throttle.Rate{Limit: 10_000, Window: time.Hour}, throttle.Rate{Limit: 40_000, Window: time.Hour}
		user := http.CanonicalHeaderKey(UserHeader) // Header.Get would allocate it per request
		plan := func(r *http.Request, _ string) throttle.Rate {
			if v := r.Header[user]; len(v) > 0 && strings.HasPrefix(v[0], "pro-") {
				return pro
			}
			return free
		}
		Drive(b, a.Wrap(perRequest(a, benchQuota(b), plan), UserKey(), benchHandler), http.StatusCreated, DistinctIDs(1<<16))
	})
	b.Run("replay-distinct-users", func(b *testing.B) {
		Drive(b, a.Wrap(replayGuard(b, b.N), UserKey(), benchHandler), http.StatusCreated, DistinctIDs(b.N))
	})
	b.Run("replay-hot-user-replayed", func(b *testing.B) {
		h := a.Wrap(replayGuard(b, 1), UserKey(), benchHandler)
		Status(b, Serve(h, Submit("hot")), http.StatusCreated)
		Drive(b, h, http.StatusCreated, []string{"hot"})
	})
}

// benchQuota is the Quota of the quota cases, on a store of its own.
func benchQuota(b *testing.B) *throttle.Quota {
	q, err := throttle.NewQuota(memstore.New(), throttle.QuotaConfig{Name: "search", Options: throttle.Options{Timeout: time.Second}})
	require.NoError(b, err)
	return q
}

// The steady state of the admitted-distinct cases: steadyClients clients
// taken in turn under a window of steadyWindow. A client comes round again
// after steadyClients requests, which take longer than steadyWindow unless
// a request takes less than 80 ns. Meanwhile the store holds the keys of
// the last steadyWindow: some 40000 at 500 ns a request.
const (
	steadyClients = 1 << 18
	steadyWindow  = 20 * time.Millisecond
)

// steadyGuard returns the guard of a Dedupe lock with a TTL of
// steadyWindow on a memory store of the default size.
func steadyGuard(b *testing.B) *guard.Guard {
	l, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "submit", TTL: steadyWindow,
		Options: throttle.Options{Timeout: time.Second}})
	require.NoError(b, err)
	return guard.Lock(l)
}

// replayGuard is benchGuard with a Replay.
func replayGuard(b *testing.B, keys int) *guard.Guard {
	// Room for keys records of up to 256 bytes too: the bench handler's are 85.
	st := memstore.New(memstore.WithMaxKeys(roomFor(keys)), memstore.WithMaxRecordBytes(256*int64(roomFor(keys))))
	r, err := throttle.NewReplay(st,
		throttle.ReplayConfig{Name: "orders", Options: throttle.Options{Timeout: time.Second}})
	require.NoError(b, err)
	return guard.Replay(r)
}

// roomFor is a memory store bound with room for keys of one policy: one
// policy may take half of the bound, the bound is per shard, and keys do
// not spread evenly over the shards, so four times over.
func roomFor(keys int) int { return 4*keys + 4096 }

// benchGuard returns the guard of a Dedupe lock (5 s TTL: nothing expires
// during a run) on a memory store with room for keys.
func benchGuard(b *testing.B, keys int) *guard.Guard {
	// A Timeout of a second rather than 100 ms: a GC pause on a shared
	// machine must not turn a measured request into a (cheaper) fail-open.
	l, err := throttle.NewLock(memstore.New(memstore.WithMaxKeys(roomFor(keys))),
		throttle.LockConfig{Name: "submit", Options: throttle.Options{Timeout: time.Second}})
	require.NoError(b, err)
	return guard.Lock(l)
}
