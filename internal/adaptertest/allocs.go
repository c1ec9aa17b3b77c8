package adaptertest

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// Budget is the most allocations per request an adapter may make, with a
// memory store and a Dedupe lock, keyed on the client IP.
type Budget struct {
	// Admitted is the budget of a request from a new client, admitted.
	Admitted float64
	// Rejected is the budget of a duplicate, turned away with 429 and a
	// problem body.
	Rejected float64
}

// Allocs fails the test when a's middleware allocates more per request
// than budget allows, measured as the benchmarks measure (see DriveWith):
// one reused request and writer. Allocation counts are deterministic,
// unlike times; callers skip it under the race detector, which changes
// them.
func Allocs(t *testing.T, a Adapter, budget Budget) {
	t.Helper()
	l, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "submit", Options: throttle.Options{Timeout: time.Second}})
	require.NoError(t, err)
	h := a.Wrap(guard.Lock(l), keyfuncs.RemoteIP(), benchHandler)
	addrs := DistinctAddrs(4000)
	r := httptest.NewRequest(http.MethodPost, "/submit", nil)
	w := &discard{h: make(http.Header)}
	i := 0
	serve := func(addr string, want int) {
		r.RemoteAddr = addr
		clear(w.h)
		w.status = 0
		h.ServeHTTP(w, r)
		if w.status != want { // not require.Equal, whose arguments would be counted
			require.FailNowf(t, "wrong status", "request from %s: status %d, want %d", addr, w.status, want)
		}
	}
	// The first requests grow the store's maps, which later ones reuse.
	for ; i < 2000; i++ {
		serve(addrs[i], http.StatusCreated)
	}
	admitted := testing.AllocsPerRun(1000, func() { serve(addrs[i], http.StatusCreated); i++ })
	rejected := testing.AllocsPerRun(1000, func() { serve(addrs[0], http.StatusTooManyRequests) })
	t.Logf("%s: %v allocations per admitted request, %v per rejected one", a.Name, admitted, rejected)
	assert.LessOrEqual(t, admitted, budget.Admitted, "allocations per admitted request")
	assert.LessOrEqual(t, rejected, budget.Rejected, "allocations per rejected request")
}
