package adaptertest_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/labstack/echo/v4"
	"go.uber.org/goleak"

	"github.com/go-throttle/throttle/echoadapter"
	"github.com/go-throttle/throttle/ginadapter"
	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/nethttp"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
)

func TestMain(m *testing.M) {
	gin.SetMode(gin.ReleaseMode)
	goleak.VerifyTestMain(m)
}

// services builds the example service in the three frameworks, each with
// its own Limiter (as separate processes would have) for p on the store
// newStore returns, with the examples' key.
func services(t *testing.T, p throttle.Policy, newStore func() throttle.Store) map[string]http.Handler {
	lim := func() *throttle.Limiter {
		l, err := throttle.New(newStore(), p)
		if err != nil {
			t.Fatal(err)
		}
		return l
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
			if rec.Code != want {
				t.Fatalf("user %q via %s first: %s answered %d, want %d", user, order[first], name, rec.Code, want)
			}
		}
	}
	for i, name := range order {
		round(i, "user-"+name)
	}
	round(0, "") // keyed on the client IP
}

// submit is the examples' policy.
var submit = throttle.Policy{Name: "submit"}

func TestSharedKeysMemory(t *testing.T) {
	store := memstore.New()
	checkShared(t, services(t, submit, func() throttle.Store { return store }))
}

func TestSharedKeysRedis(t *testing.T) {
	r := adaptertest.StartRedis(t)
	checkShared(t, services(t, submit, func() throttle.Store { return adaptertest.NewStore(t, r.Server.Addr) }))
}

// search is a Quota shared by the three services: 2 requests a minute, 4
// at once.
var search = throttle.Policy{Name: "search", Mode: throttle.Quota, Limit: 2, Burst: 4, Window: time.Minute}

// checkSharedQuota sends one user's requests to the three frameworks in
// turn, three times the Burst: the quota is one across them, so exactly
// the first Burst are admitted, each seeing what the others left, and all
// three say the same RateLimit-Policy.
func checkSharedQuota(t *testing.T, svc map[string]http.Handler) {
	order := []string{"nethttp", "gin", "echo"}
	want := adaptertest.Field{Name: "search", Q: 2, W: 60, HasW: true, Burst: 4}
	policies := map[string][]string{}
	admitted := 0
	for i := range 3 * search.Burst {
		name := order[i%len(order)]
		rec := adaptertest.Serve(svc[name], adaptertest.Submit("alice"))
		h := rec.Header()
		adaptertest.CheckPolicy(t, h, want)
		if prev, ok := policies[name]; ok && !slices.Equal(prev, h.Values("RateLimit-Policy")) {
			t.Fatalf("%s: RateLimit-Policy %q, then %q", name, prev, h.Values("RateLimit-Policy"))
		}
		policies[name] = h.Values("RateLimit-Policy")
		if i < search.Burst {
			if rec.Code != http.StatusCreated {
				t.Fatalf("request %d via %s: status %d, want %d", i+1, name, rec.Code, http.StatusCreated)
			}
			admitted++
			// One request refills every 30 s.
			adaptertest.CheckLimit(t, h, "search", int64(search.Burst-1-i), 1, 30)
			continue
		}
		if rec.Code != http.StatusTooManyRequests {
			t.Fatalf("request %d via %s: status %d, want %d (admitted so far: %d)", i+1, name, rec.Code, http.StatusTooManyRequests, admitted)
		}
		adaptertest.CheckRejectedLimit(t, h, "search", 0)
	}
	if admitted != search.Burst {
		t.Fatalf("admitted %d in all, want %d", admitted, search.Burst)
	}
	// Byte for byte the same field from all three.
	if n, g, e := policies["nethttp"], policies["gin"], policies["echo"]; !slices.Equal(n, g) || !slices.Equal(n, e) {
		t.Fatalf("RateLimit-Policy differs: nethttp %q, gin %q, echo %q", n, g, e)
	}
}

func TestSharedQuotaMemory(t *testing.T) {
	store := memstore.New()
	checkSharedQuota(t, services(t, search, func() throttle.Store { return store }))
}

func TestSharedQuotaRedis(t *testing.T) {
	r := adaptertest.StartRedis(t)
	checkSharedQuota(t, services(t, search, func() throttle.Store { return adaptertest.NewStore(t, r.Server.Addr) }))
}
