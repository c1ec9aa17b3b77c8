package adaptertest_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-throttle/throttle/echoadapter"
	"github.com/go-throttle/throttle/ginadapter"
	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/nethttp"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
)

func TestMain(m *testing.M) {
	gin.SetMode(gin.ReleaseMode)
	goleak.VerifyTestMain(m)
}

// services builds the example service in the three frameworks, each with
// its own limiter and guard (as separate processes would have), which
// newGuard makes on the store newStore returns, with the examples' key.
func services(t *testing.T, newGuard func(store.Store) (*guard.Guard, error), newStore func() store.Store) map[string]http.Handler {
	lim := func() *guard.Guard {
		g, err := newGuard(newStore())
		require.NoError(t, err)
		return g
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { adaptertest.OK(w, http.StatusCreated) })

	mux := http.NewServeMux()
	mux.Handle("POST /submit", nethttp.Middleware(lim(), adaptertest.ExampleKey())(ok))

	g := gin.New()
	g.POST("/submit", ginadapter.Middleware(lim(), adaptertest.ExampleKey()), gin.WrapH(ok))

	e := echo.New()
	e.POST("/submit", echo.WrapHandler(ok), echoadapter.Middleware(lim(), adaptertest.ExampleKey()))

	return map[string]http.Handler{"nethttp": mux, "gin": g, "echo": e}
}

// checkShared sends the same user to each framework in turn, starting with
// each of them: the first is admitted, the others are rejected. The first
// round also keys a request without the user header on the client address.
func checkShared(t *testing.T, svc map[string]http.Handler) {
	order := []string{"nethttp", "gin", "echo"}
	round := func(first int, user string) {
		for j := range order {
			name := order[(first+j)%len(order)]
			rec := adaptertest.Serve(svc[name], adaptertest.Submit(user))
			want := http.StatusTooManyRequests
			if j == 0 {
				want = http.StatusCreated
			}
			require.Equal(t, want, rec.Code, "user %q via %s first: %s's status", user, order[first], name)
		}
	}
	for i, name := range order {
		round(i, "user-"+name)
	}
	round(0, "") // keyed on the client IP
}

// submit makes the examples' guard: a Dedupe lock.
func submit(st store.Store) (*guard.Guard, error) {
	l, err := throttle.NewLock(st, throttle.LockConfig{Name: "submit"})
	if err != nil {
		return nil, err
	}
	return guard.Lock(l), nil
}

func TestSharedKeysMemory(t *testing.T) {
	st := memstore.New()
	checkShared(t, services(t, submit, func() store.Store { return st }))
}

func TestSharedKeysRedis(t *testing.T) {
	r := adaptertest.StartRedis(t)
	checkShared(t, services(t, submit, func() store.Store { return adaptertest.NewStore(t, r.Server.Addr) }))
}

// searchRate is the rate of a Quota shared by the three services: 2
// requests a minute, 4 at once.
var searchRate = throttle.Rate{Limit: 2, Burst: 4, Window: time.Minute}

// search makes the guard of the Quota "search" at searchRate.
func search(st store.Store) (*guard.Guard, error) {
	q, err := throttle.NewQuota(st, throttle.QuotaConfig{Name: "search"})
	if err != nil {
		return nil, err
	}
	return guard.Quota(q, searchRate), nil
}

// checkSharedQuota sends one user's requests to the three frameworks in
// turn, three times the Burst: the quota is one across them, so exactly
// the first Burst are admitted, each seeing what the others left, and all
// three say the same RateLimit-Policy.
func checkSharedQuota(t *testing.T, svc map[string]http.Handler) {
	order := []string{"nethttp", "gin", "echo"}
	want := adaptertest.Field{Name: "search", Q: 2, W: 60, HasW: true, Burst: 4}
	policies := map[string][]string{}
	admitted := 0
	for i := range 3 * searchRate.Burst {
		name := order[i%len(order)]
		rec := adaptertest.Serve(svc[name], adaptertest.Submit("alice"))
		h := rec.Header()
		adaptertest.CheckPolicy(t, h, want)
		if prev, ok := policies[name]; ok {
			require.Equal(t, prev, h.Values("RateLimit-Policy"), "%s: RateLimit-Policy, then again", name)
		}
		policies[name] = h.Values("RateLimit-Policy")
		if i < searchRate.Burst {
			require.Equal(t, http.StatusCreated, rec.Code, "request %d via %s", i+1, name)
			admitted++
			// One request refills every 30 s.
			adaptertest.CheckLimit(t, h, "search", int64(searchRate.Burst-1-i), 1, 30)
			continue
		}
		require.Equal(t, http.StatusTooManyRequests, rec.Code, "request %d via %s (admitted so far: %d)", i+1, name, admitted)
		adaptertest.CheckRejectedLimit(t, h, "search", 0)
	}
	require.Equal(t, searchRate.Burst, admitted, "admitted in all")
	// Byte for byte the same field from all three.
	n, g, e := policies["nethttp"], policies["gin"], policies["echo"]
	assert.True(t, slices.Equal(n, g) && slices.Equal(n, e), "RateLimit-Policy differs: nethttp %q, gin %q, echo %q", n, g, e)
}

func TestSharedQuotaMemory(t *testing.T) {
	st := memstore.New()
	checkSharedQuota(t, services(t, search, func() store.Store { return st }))
}

func TestSharedQuotaRedis(t *testing.T) {
	r := adaptertest.StartRedis(t)
	checkSharedQuota(t, services(t, search, func() store.Store { return adaptertest.NewStore(t, r.Server.Addr) }))
}
