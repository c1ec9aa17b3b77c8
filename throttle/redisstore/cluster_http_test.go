package redisstore_test

import (
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/nethttp"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
)

// testMiddleware puts nethttp.Middleware in front of a handler with the
// store on the cluster. adaptertest.Run builds its Locks on memory
// stores, so this is a focused version of its duplicate and exclusive
// cases: two services (two stores on two cluster clients, as two processes
// would have) and users whose keys are on each master. The first request
// of a user is served (201), duplicates are turned away with 429 by either
// service; an Exclusive fenced request sees a fencing token from the
// cluster, and a concurrent duplicate gets 409.
func (env *clusterEnv) testMiddleware(t *testing.T) {
	services := make([]http.Handler, 2)
	for i := range services {
		own := &clusterEnv{Cluster: env.Cluster, cc: env.Client(t)} // a client of its own
		l, err := throttle.NewLock(own.store(t), throttle.LockConfig{Name: "submit", Options: throttle.Options{Timeout: time.Second}})
		require.NoError(t, err)
		services[i] = nethttp.Middleware(guard.Lock(l), adaptertest.UserKey())(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			adaptertest.OK(w, http.StatusCreated)
		}))
	}
	for _, m := range env.Masters {
		user, key := env.idOn(t, m, "throttle", "submit")
		adaptertest.Status(t, adaptertest.Serve(services[0], adaptertest.Submit(user)), http.StatusCreated)
		for _, svc := range services {
			adaptertest.CheckProblem(t, adaptertest.Serve(svc, adaptertest.Submit(user)), http.StatusTooManyRequests, adaptertest.QuotaExceeded)
		}
		n, err := env.NodeClient(t, m).Exists(t.Context(), key).Result()
		require.NoError(t, err, "EXISTS on %s", m.Addr)
		require.EqualValues(t, 1, n, "key of %s not on %s", user, m.Addr)
	}

	l, err := throttle.NewLock(env.store(t), throttle.LockConfig{Name: "job", Mode: throttle.Exclusive, Fence: true,
		Options: throttle.Options{Timeout: time.Second}})
	require.NoError(t, err)
	entered, release := make(chan struct{}), make(chan struct{})
	h := nethttp.Middleware(guard.Lock(l), adaptertest.UserKey())(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Block") != "" {
			close(entered)
			<-release
		}
		_, _ = io.WriteString(w, strconv.FormatInt(throttle.LeaseFrom(r.Context()).Fence(), 10))
	}))
	for _, m := range env.Masters {
		user, _ := env.idOn(t, m, "throttle", "job")
		var last int64
		for range 2 {
			rec := adaptertest.Serve(h, adaptertest.Submit(user))
			adaptertest.Status(t, rec, http.StatusOK)
			f, err := strconv.ParseInt(rec.Body.String(), 10, 64)
			require.NoError(t, err, "fence %q for a key on %s", rec.Body.String(), m.Addr)
			require.Greater(t, f, last, "fence after %d for a key on %s", last, m.Addr)
			last = f
		}
	}
	user, _ := env.idOn(t, env.Masters[1], "throttle", "job")
	blocked := adaptertest.Submit(user)
	blocked.Header.Set("X-Block", "1")
	done := make(chan int)
	go func() { done <- adaptertest.Serve(h, blocked).Code }()
	<-entered
	adaptertest.Status(t, adaptertest.Serve(h, adaptertest.Submit(user)), http.StatusConflict)
	close(release)
	require.Equal(t, http.StatusOK, <-done, "blocked request")
	adaptertest.Status(t, adaptertest.Serve(h, adaptertest.Submit(user)), http.StatusOK)
}
