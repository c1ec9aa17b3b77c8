//go:build !race

package fiberadapter_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/fiberadapter"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// TestAllocs pins the allocations per request of a Dedupe lock keyed on
// the client IP (fiberadapter.RemoteIP), on a memory store, served as
// fasthttp serves the app (no net/http conversion): the client IP and the
// key and token (one string each) when admitted (fiber's context and
// response are pooled, and the RateLimit fields are set without a map on
// the heap); the client IP, the key and token, and the Lock's
// ContendedError when turned away. The race detector changes allocation
// counts, hence the build tag.
func TestAllocs(t *testing.T) {
	l, err := throttle.NewLock(memstore.New(), throttle.LockConfig{Name: "submit", Options: throttle.Options{Timeout: time.Second}})
	require.NoError(t, err)
	d := newDriver(t, submitApp(fiberadapter.Middleware(guard.Lock(l), fiberadapter.RemoteIP())))
	addrs := clientAddrs(4000)
	i := 0
	for ; i < 2000; i++ { // the first requests grow the store's maps
		d.serve(addrs[i], http.StatusCreated)
	}
	admitted := testing.AllocsPerRun(1000, func() { d.serve(addrs[i], http.StatusCreated); i++ })
	rejected := testing.AllocsPerRun(1000, func() { d.serve(addrs[0], http.StatusTooManyRequests) })
	t.Logf("%v allocations per admitted request, %v per rejected one", admitted, rejected)
	assert.LessOrEqual(t, admitted, 2.0, "allocations per admitted request")
	assert.LessOrEqual(t, rejected, 3.0, "allocations per rejected request")
}
