package guard

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
)

func replayGuard(t *testing.T, opts ...Option) *Guard {
	t.Helper()
	r, err := throttle.NewReplay(memstore.New(), throttle.ReplayConfig{Name: "orders", TTL: time.Minute})
	require.NoError(t, err)
	return Replay(r, opts...)
}

// TestReplayFieldsOfNow: a replay's RateLimit fields are those of now, t
// from the record's expiry, whatever the record holds (a record of an
// older version kept RateLimit fields); a record whose expiry is unknown
// or past gets RateLimit without t.
func TestReplayFieldsOfNow(t *testing.T) {
	old := &response{status: 201, header: http.Header{"Location": {"/orders/7"}, "Ratelimit": {`"orders";r=0;t=60`},
		"Ratelimit-Policy": {`"orders";q=1;w=60`}, "Retry-After": {"60"}, "X-Ratelimit-Reset": {"60"}}, body: []byte(`{"id":7}`)}
	for _, c := range []struct {
		name    string
		expires time.Time
		limit   string
		reset   []string
	}{
		{"held 30 s", time.Now().Add(30 * time.Second), `"orders";r=0;t=30`, []string{"30"}},
		{"held 1.2 s", time.Now().Add(1200 * time.Millisecond), `"orders";r=0;t=2`, []string{"2"}},
		{"expiry unknown", time.UnixMilli(0), `"orders";r=0`, nil},
		{"expired", time.Now().Add(-time.Second), `"orders";r=0`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := replayGuard(t, LegacyHeaders())
			rej := g.replayed(encodeRecord(old, "", c.expires), "")
			require.NotNil(t, rej.replay, "not a replay: %+v", rej)
			w := httptest.NewRecorder()
			rej.writeReplay(w)
			h := w.Header()
			require.Equal(t, 201, w.Code)
			require.Equal(t, []string{"/orders/7"}, h["Location"])
			require.Equal(t, []string{`"orders";q=1;w=60`}, h["Ratelimit-Policy"])
			require.Equal(t, []string{c.limit}, h["Ratelimit"])
			require.Empty(t, h["Retry-After"], "Retry-After")
			require.Equal(t, []string{"1"}, h["X-Ratelimit-Limit"])
			require.Equal(t, []string{"0"}, h["X-Ratelimit-Remaining"])
			require.Equal(t, c.reset, h["X-Ratelimit-Reset"])
			require.Equal(t, `{"id":7}`, w.Body.String())
		})
	}
}

// TestCaptureKeepsNoRateLimit: a first answer's RateLimit fields are not
// recorded: a replay gets its own.
func TestCaptureKeepsNoRateLimit(t *testing.T) {
	var c Capture
	h := http.Header{"Ratelimit": {"x"}, "Ratelimit-Policy": {"y"}, "Location": {"/orders/1"}}
	c.WriteHeader(h, http.StatusCreated)
	require.Equal(t, http.Header{"Location": {"/orders/1"}}, c.recorded().header)
}

// TestReplayID: a Replay's stored identity is scoped by method and route,
// the path standing for a route when none was matched.
func TestReplayID(t *testing.T) {
	post := httptest.NewRequest(http.MethodPost, "/orders", nil)
	put := httptest.NewRequest(http.MethodPut, "/orders", nil)
	base := replayID(post, "/orders", "alice:k1")
	require.Equal(t, base, replayID(post, "", "alice:k1"), "an unmatched route is the path")
	require.NotEqual(t, base, replayID(post, "/refunds", "alice:k1"), "another route")
	require.NotEqual(t, base, replayID(put, "/orders", "alice:k1"), "another method")
	require.NotEqual(t, base, replayID(post, "/orders", "alice:k2"), "another key")
	// The parts are escaped: no route and id can pass for another pair.
	require.NotEqual(t, replayID(post, "/a", "b:c"), replayID(post, "/a:b", "c"))
}
