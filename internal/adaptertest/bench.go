package adaptertest

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// discard is a ResponseWriter that keeps nothing but the status, so that
// the benchmarks measure the engine and middleware, not a recorder.
type discard struct {
	h      http.Header
	status int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(s int)           { d.status = s }

var created = []byte(`{"ok":true}` + "\n")

// benchHandler is the guarded handler: 201 with a small body.
var benchHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(created)
})

// Bench measures the middleware's cost per request against the bare
// engine. All run on one goroutine with a memory store; the key is the
// X-User-ID header:
//
//   - bare: the engine and handler without the middleware;
//   - dedupe-distinct-keys: b.N distinct users, so every request is
//     admitted and b.N keys are held at the end;
//   - quota-65536-users: a Quota of 10000 an hour over 65536 users taken
//     in turn, so every request is admitted and charged, and answered
//     with its RateLimit fields;
//   - dedupe-hot-key-rejected: one user whose key is held, so every request
//     is rejected with 429 and a problem body;
//   - replay-distinct-keys: a Replay policy and b.N distinct users, so
//     every request runs, is captured and recorded (two store calls);
//   - replay-hot-key-replayed: one user whose first answer is recorded, so
//     every request is answered with it (two store calls: the refused
//     acquisition and the read).
func Bench(b *testing.B, a Adapter) {
	b.Run("bare", func(b *testing.B) {
		Drive(b, a.Bare(benchHandler), http.StatusCreated, DistinctIDs(b.N))
	})
	b.Run("dedupe-distinct-keys", func(b *testing.B) {
		l := benchLimiter(b, b.N)
		Drive(b, a.Wrap(l, UserKey(), benchHandler), http.StatusCreated, DistinctIDs(b.N))
	})
	b.Run("quota-65536-users", func(b *testing.B) {
		l, err := throttle.New(memstore.New(), throttle.Policy{Name: "search", Mode: throttle.Quota,
			Limit: 10_000, Window: time.Hour, Timeout: time.Second})
		if err != nil {
			b.Fatal(err)
		}
		Drive(b, a.Wrap(l, UserKey(), benchHandler), http.StatusCreated, DistinctIDs(1<<16))
	})
	b.Run("dedupe-hot-key-rejected", func(b *testing.B) {
		l := benchLimiter(b, 1)
		h := a.Wrap(l, UserKey(), benchHandler)
		Status(b, Serve(h, Submit("hot")), http.StatusCreated)
		Drive(b, h, http.StatusTooManyRequests, []string{"hot"})
	})
	b.Run("replay-distinct-keys", func(b *testing.B) {
		l := replayLimiter(b, b.N)
		Drive(b, a.Wrap(l, UserKey(), benchHandler), http.StatusCreated, DistinctIDs(b.N))
	})
	b.Run("replay-hot-key-replayed", func(b *testing.B) {
		l := replayLimiter(b, 1)
		h := a.Wrap(l, UserKey(), benchHandler)
		Status(b, Serve(h, Submit("hot")), http.StatusCreated)
		Drive(b, h, http.StatusCreated, []string{"hot"})
	})
}

// replayLimiter is benchLimiter with a Replay policy.
func replayLimiter(b *testing.B, keys int) *throttle.Limiter {
	l, err := throttle.New(memstore.New(memstore.WithMaxKeys(2*keys+4096)),
		throttle.Policy{Name: "orders", Mode: throttle.Replay, Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// benchLimiter returns a Dedupe limiter on a memory store with room for
// keys (twice over: the bound is per shard, and keys do not spread evenly).
func benchLimiter(b *testing.B, keys int) *throttle.Limiter {
	// A Timeout of a second rather than 100 ms: a GC pause on a shared
	// machine must not turn a measured request into a (cheaper) fail-open.
	l, err := throttle.New(memstore.New(memstore.WithMaxKeys(2*keys+4096)),
		throttle.Policy{Name: "submit", Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// DistinctIDs returns n user ids, "user-0" and on, built before a
// benchmark's timer starts.
func DistinctIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "user-" + strconv.Itoa(i)
	}
	return ids
}

// Drive serves b.N requests (POST /submit, the user in X-User-ID) through
// h, user ids[i%len(ids)], on one goroutine into a ResponseWriter that
// keeps only the status, and fails the benchmark on a status other than
// want. The request and writer are reused, so that what is measured is h.
func Drive(b *testing.B, h http.Handler, want int, ids []string) {
	r := httptest.NewRequest(http.MethodPost, "/submit", nil)
	val := []string{""}
	r.Header["X-User-Id"] = val
	w := &discard{h: make(http.Header)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		val[0] = ids[i%len(ids)]
		clear(w.h)
		w.status = 0
		h.ServeHTTP(w, r)
		if w.status != want {
			b.Fatalf("request %d: status %d, want %d", i, w.status, want)
		}
	}
}
