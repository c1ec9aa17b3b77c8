package adaptertest

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle/guard"
)

// refunds is a handler that answers each run with 201, Location
// /refunds/{n} and a JSON body {"id":n}, like Orders for another route.
type refunds struct{ runs atomic.Int32 }

func (f *refunds) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := f.runs.Add(1) + 1000 // never an order's id
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", fmt.Sprintf("/refunds/%d", n))
	w.WriteHeader(http.StatusCreated)
	_, _ = fmt.Fprintf(w, `{"id":%d}`+"\n", n)
}

// post returns a request of method to path for user with the
// Idempotency-Key key and body.
func post(method, path, user, key, body string) *http.Request {
	r := Order(user, key, body)
	r.Method = method
	r.URL.Path, r.RequestURI = path, path
	return r
}

// testReplayRoutes: one Replay guarding two routes, with the key the
// README recommends (user and Idempotency-Key, no route), never answers a
// request on one route, or with another method, with the other's
// response; each route still replays its own.
func testReplayRoutes(t *testing.T, a Adapter) {
	if a.Routes == nil {
		t.Skip("the adapter has no router to serve two routes on")
	}
	g := guard.Replay(NewReplay(t, ReplayConfig()))
	orders, refund := &Orders{}, &refunds{}
	h := a.Routes(g, ReplayKey(), map[string]http.Handler{"/orders": orders, "/refunds": refund})
	const body = `{"amount":10}`
	order := Serve(h, post(http.MethodPost, "/orders", "alice", "k1", body))
	id := orderID(t, order)
	rec := Serve(h, post(http.MethodPost, "/refunds", "alice", "k1", body))
	Status(t, rec, http.StatusCreated)
	require.Empty(t, rec.Header().Get(ReplayedHeader), "a refund was answered with the order's response")
	require.Equal(t, "/refunds/1001", rec.Header().Get("Location"), "the refund's Location")
	require.Equal(t, int32(1), refund.runs.Load(), "refund runs")
	// Another method on the same route is another operation.
	id2 := orderID(t, Serve(h, post(http.MethodPut, "/orders", "alice", "k1", body)))
	require.NotEqual(t, id, id2, "PUT /orders was answered with POST /orders's order")
	// Each route replays its own.
	checkReplayed(t, Serve(h, post(http.MethodPost, "/orders", "alice", "k1", body)), id)
	rec = Serve(h, post(http.MethodPost, "/refunds", "alice", "k1", body))
	require.Equal(t, "true", rec.Header().Get(ReplayedHeader), ReplayedHeader)
	require.Equal(t, "/refunds/1001", rec.Header().Get("Location"), "the replayed refund's Location")
	require.Equal(t, int32(2), orders.Runs.Load(), "order runs")
	require.Equal(t, int32(1), refund.runs.Load(), "refund runs")
}

// testReplayFieldsNow: a replay carries the RateLimit fields as of its own
// time, never the recorded answer's: the policy as configured, r=0 and t
// the seconds the key is still held, which shrink as it ages; no fields the
// first answer's handler set (RateLimit, Retry-After) are repeated.
func testReplayFieldsNow(t *testing.T, a Adapter) {
	c := ReplayConfig()
	c.TTL = 5 * time.Second
	var runs atomic.Int32
	h := a.Wrap(guard.Replay(NewReplay(t, c)), ReplayKey(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		// A handler that overwrites the guard's fields: the first answer
		// says so, a replay must not.
		w.Header().Set(RateLimitHeader, `"orders";r=7;t=99`)
		w.Header().Set("Retry-After", "99")
		OK(w, http.StatusCreated)
	}))
	first := Serve(h, Order("alice", "k1", "{}"))
	Status(t, first, http.StatusCreated)
	require.Equal(t, `"orders";r=7;t=99`, first.Header().Get(RateLimitHeader), "the handler's field")
	check := func(maxT int64) int64 {
		t.Helper()
		rec := Serve(h, Order("alice", "k1", "{}"))
		Status(t, rec, http.StatusCreated)
		require.Equal(t, "true", rec.Header().Get(ReplayedHeader), ReplayedHeader)
		CheckPolicy(t, rec.Header(), WindowPolicy("orders", 1, 5))
		noRetryAfter(t, rec.Header())
		require.Len(t, rec.Header().Values(RateLimitHeader), 1, "RateLimit lines")
		return CheckLimit(t, rec.Header(), "orders", 0, 1, maxT).T
	}
	t1 := check(5)
	time.Sleep(1100 * time.Millisecond)
	t2 := check(t1)
	require.Less(t, t2, t1, "t of a replay 1.1 s later")
	require.Equal(t, int32(1), runs.Load(), "handler runs")
}
