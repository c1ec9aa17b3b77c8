package adaptertest

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// The benchmark harness. It must cost next to nothing itself, or it hides
// what it measures: the bare engine with the benchHandler costs tens of
// nanoseconds and no allocation (an httptest.NewRecorder or a new
// *http.Request per request would cost more than the middleware). So one
// *http.Request and one discard writer serve every request of a run; only
// what differs between requests, the user header or the peer address, is
// changed in place, from values built before the timer starts.

// discard is a ResponseWriter that keeps nothing but the status, so that
// the benchmarks measure the engine and middleware, not a recorder. Its
// header map is cleared between requests and reused.
type discard struct {
	h      http.Header
	status int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(s int)           { d.status = s }

// Vary prepares the reused request r and returns what gives request i its
// identity. That must not allocate: it only points a field of r at a value
// built in advance.
type Vary func(r *http.Request) (set func(i int))

// ByUser gives request i the user ids[i%len(ids)] (the UserHeader).
func ByUser(ids []string) Vary {
	return func(r *http.Request) func(int) {
		val := []string{""}
		r.Header[http.CanonicalHeaderKey(UserHeader)] = val
		return func(i int) { val[0] = ids[i%len(ids)] }
	}
}

// ByAddr gives request i the peer address (RemoteAddr, "ip:port")
// addrs[i%len(addrs)].
func ByAddr(addrs []string) Vary {
	return func(r *http.Request) func(int) {
		return func(i int) { r.RemoteAddr = addrs[i%len(addrs)] }
	}
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

// DistinctAddrs returns n peer addresses ("ip:port") of distinct IPv4
// clients, counting up from 10.0.0.0 (and past 10.255.255.255 for n above
// 2^24), built before a benchmark's timer starts.
func DistinctAddrs(n int) []string {
	addrs := make([]string, n)
	for i := range addrs {
		ip := uint32(10<<24 + i)
		b := make([]byte, 0, 21)
		for shift := 24; shift >= 0; shift -= 8 {
			b = strconv.AppendUint(b, uint64(ip>>shift&0xff), 10)
			if shift > 0 {
				b = append(b, '.')
			}
		}
		addrs[i] = string(append(b, ":40000"...))
	}
	return addrs
}

// Drive serves b.N requests (POST /submit, the user in X-User-ID) through
// h, user ids[i%len(ids)], and fails the benchmark on a status other than
// want. It is DriveWith(b, h, want, ByUser(ids)).
func Drive(b *testing.B, h http.Handler, want int, ids []string) {
	DriveWith(b, h, want, ByUser(ids))
}

// DriveWith serves b.N requests (POST /submit) through h on one goroutine,
// request i given its identity by vary, into a ResponseWriter that keeps
// only the status, and fails the benchmark on a status other than want.
// The request and writer are reused (see the top of this file), so that
// what is measured is h.
func DriveWith(b *testing.B, h http.Handler, want int, vary Vary) {
	r := httptest.NewRequest(http.MethodPost, "/submit", nil)
	set := vary(r)
	w := &discard{h: make(http.Header)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		set(i)
		clear(w.h)
		w.status = 0
		h.ServeHTTP(w, r)
		if w.status != want { // not require.Equal, whose arguments would allocate per request
			require.FailNowf(b, "wrong status", "request %d: status %d, want %d", i, w.status, want)
		}
	}
}

// DriveParallel serves b.N requests (POST /submit) through h from
// perCPU×GOMAXPROCS goroutines at once (b.SetParallelism), each with a
// request and writer of its own, reused, and fails the benchmark on a
// status other than want. It reports the answers of status other, when
// not 0, as other/op: under contention an adaptive limit may shed some.
func DriveParallel(b *testing.B, h http.Handler, perCPU, want, other int) {
	var others atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(perCPU)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := httptest.NewRequest(http.MethodPost, "/submit", nil)
		w := &discard{h: make(http.Header)}
		for pb.Next() {
			clear(w.h)
			w.status = 0
			h.ServeHTTP(w, r)
			switch {
			case w.status == want:
			case other != 0 && w.status == other:
				others.Add(1)
			default:
				b.Errorf("status %d, want %d", w.status, want)
				return
			}
		}
	})
	if other != 0 {
		b.ReportMetric(float64(others.Load())/float64(b.N), strconv.Itoa(other)+"s/op")
	}
}
