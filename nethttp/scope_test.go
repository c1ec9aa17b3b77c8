package nethttp_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/nethttp"
	"github.com/go-throttle/throttle/throttle/guard"
)

// TestReplayAroundMux: a Replay middleware around a whole ServeMux sees no
// r.Pattern (the mux sets it as it dispatches); the path stands for the
// route, so /orders and /refunds still never answer for each other.
func TestReplayAroundMux(t *testing.T) {
	g := guard.Replay(adaptertest.NewReplay(t, adaptertest.ReplayConfig()))
	mux := http.NewServeMux()
	for _, path := range []string{"/orders", "/refunds"} {
		mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, path)
		})
	}
	h := nethttp.Middleware(g, adaptertest.ReplayKey())(mux)
	send := func(path string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, path, strings.NewReader("{}"))
		r.Header.Set(adaptertest.UserHeader, "alice")
		r.Header.Set("Idempotency-Key", `"k1"`)
		return adaptertest.Serve(h, r)
	}
	for i, path := range []string{"/orders", "/refunds", "/orders", "/refunds"} {
		rec := send(path)
		require.Equal(t, path, rec.Body.String(), "answer %d", i)
		require.Equal(t, i >= 2, rec.Header().Get(adaptertest.ReplayedHeader) == "true", "answer %d replayed", i)
	}
}
