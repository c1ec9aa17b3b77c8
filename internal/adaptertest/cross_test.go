package adaptertest_test

import (
	"net/http"
	"testing"

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
// its own Limiter (as separate processes would have) on the store newStore
// returns, with the examples' policy and key.
func services(t *testing.T, newStore func() throttle.Store) map[string]http.Handler {
	p := throttle.Policy{Name: "submit"}
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

func TestSharedKeysMemory(t *testing.T) {
	store := memstore.New()
	checkShared(t, services(t, func() throttle.Store { return store }))
}

func TestSharedKeysRedis(t *testing.T) {
	r := adaptertest.StartRedis(t)
	checkShared(t, services(t, func() throttle.Store { return adaptertest.NewStore(t, r.Server.Addr) }))
}
