package guard

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/flow"
	"github.com/go-throttle/throttle/throttle/memstore"
)

func replayGuard(t *testing.T, opts ...Option) *Guard {
	t.Helper()
	r, err := throttle.NewReplay(memstore.New(), throttle.ReplayConfig{Name: "orders", TTL: time.Minute})
	require.NoError(t, err)
	return Replay(r, opts...)
}

// order serves a request to g answered 201 by its handler, and returns
// what the client got.
func order(g *Guard, method, path, route string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	r := httptest.NewRequest(method, path, nil)
	var rej Rejection
	ok := g.Serve(w, r, flow.Call{Route: route, ID: "alice"}, &rej, func(_ *http.Request, c *Capture) int {
		w.Header().Set("Location", "/orders/7")
		c.WriteHeader(w.Header(), http.StatusCreated)
		w.WriteHeader(http.StatusCreated)
		c.Write([]byte(`{"id":7}`))
		_, _ = w.Write([]byte(`{"id":7}`))
		return http.StatusCreated
	})
	if !ok {
		rej.Write(w)
	}
	return w
}

// TestReplayFieldsOfNow: a replay's RateLimit fields are those of now,
// whatever the record holds (a record of an older version kept RateLimit
// fields), with the legacy ones, and no Retry-After.
func TestReplayFieldsOfNow(t *testing.T) {
	g := replayGuard(t, LegacyHeaders())
	require.Equal(t, http.StatusCreated, order(g, http.MethodPost, "/orders", "/orders").Code)
	_, ref, ok := g.job.Begin(t.Context(), flow.Call{Method: http.MethodPost, Route: "/orders", ID: "alice"})
	require.False(t, ok, "a duplicate went ahead")
	require.Equal(t, ReasonReplayed, ref.Reason)
	ref.Replayed.Header["Ratelimit"] = []string{`"orders";r=0;t=60`} // as an older version recorded
	ref.Replayed.Header["Retry-After"] = []string{"60"}
	ref.Replayed.Header["X-Ratelimit-Reset"] = []string{"60"}
	rej := g.Rejection(ref)
	require.Equal(t, http.StatusCreated, rej.Status)
	w := written(&rej)
	h := w.Header()
	require.Equal(t, 201, w.Code)
	require.Equal(t, []string{"/orders/7"}, h["Location"])
	require.Equal(t, []string{"true"}, h["Idempotent-Replayed"])
	require.Equal(t, []string{`"orders";q=1;w=60`}, h["Ratelimit-Policy"])
	require.Regexp(t, `^"orders";r=0;t=(59|60)$`, h.Get("Ratelimit"))
	require.Empty(t, h["Retry-After"], "Retry-After")
	require.Equal(t, []string{"1"}, h["X-Ratelimit-Limit"])
	require.Equal(t, []string{"0"}, h["X-Ratelimit-Remaining"])
	require.Equal(t, h.Get("Ratelimit")[len(`"orders";r=0;t=`):], h.Get("X-Ratelimit-Reset"))
	require.Equal(t, `{"id":7}`, w.Body.String())
}

// TestCaptureKeepsNoRateLimit: a first answer's RateLimit fields are not
// recorded: a replay gets its own.
func TestCaptureKeepsNoRateLimit(t *testing.T) {
	var c Capture
	h := http.Header{"Ratelimit": {"x"}, "Ratelimit-Policy": {"y"}, "Location": {"/orders/1"}}
	c.WriteHeader(h, http.StatusCreated)
	require.Equal(t, map[string][]string{"Location": {"/orders/1"}}, c.answer().Header)
}

// TestReplayScope: a Replay's stored identity is scoped by method and
// route, the path standing for a route when none was matched, and a
// ServeMux pattern by its path.
func TestReplayScope(t *testing.T) {
	g := replayGuard(t)
	replayed := func(w *httptest.ResponseRecorder) bool { return w.Header().Get("Idempotent-Replayed") == "true" }
	require.False(t, replayed(order(g, http.MethodPost, "/orders", "/orders")))
	require.True(t, replayed(order(g, http.MethodPost, "/orders", "")), "an unmatched route is the path")
	require.True(t, replayed(order(g, http.MethodPost, "/orders", "POST example.com/orders")), "a pattern is its path")
	require.False(t, replayed(order(g, http.MethodPut, "/orders", "/orders")), "another method")
	require.False(t, replayed(order(g, http.MethodPost, "/orders", "/refunds")), "another route")
}
