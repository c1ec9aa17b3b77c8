package redisstore_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/adaptertest"
	"github.com/go-throttle/throttle/nethttp"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
)

// TestNearCacheEarlyRelease checks the two ways a held key ends before its
// TTL through the HTTP middleware: a Dedupe request whose handler fails
// (the key is freed for a retry) and an Exclusive request that finishes.
// Process A serves the first request and holds the key while its handler
// runs; process B, flooded with copies, answers them from its near cache
// (no command); once A's handler returns, B's next copy is admitted by
// Redis, so no remembered refusal outlives the hold.
func TestNearCacheEarlyRelease(t *testing.T) {
	for _, tc := range []struct {
		mode    throttle.Mode
		refused int // B's answer while A holds the key
		status  int // A's handler's answer when it is let go
	}{
		{throttle.Dedupe, http.StatusTooManyRequests, http.StatusInternalServerError},
		{throttle.Exclusive, http.StatusConflict, http.StatusOK},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			_, srv, c := newStore(t)
			a, b := openNear(t, srv.Addr, ""), openNear(t, srv.Addr, "")
			cfg := throttle.LockConfig{Name: "early", Mode: tc.mode, TTL: time.Hour, Options: throttle.Options{Timeout: time.Second}}
			entered, letGo := make(chan struct{}), make(chan struct{})
			serve := func(s *throttle.Lock, blocking bool) http.Handler {
				return nethttp.Middleware(guard.Lock(s), adaptertest.UserKey())(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					if !blocking {
						adaptertest.OK(w, http.StatusCreated)
						return
					}
					close(entered)
					<-letGo
					adaptertest.OK(w, tc.status)
				}))
			}
			la, err := throttle.NewLock(a, cfg)
			require.NoError(t, err)
			lb, err := throttle.NewLock(b, cfg)
			require.NoError(t, err)
			ha, hb := serve(la, true), serve(lb, false)

			done := make(chan int)
			go func() { done <- adaptertest.Serve(ha, adaptertest.Submit("ann")).Code }()
			<-entered
			refusedFromCache(t, b, c, func() {
				adaptertest.Status(t, adaptertest.Serve(hb, adaptertest.Submit("ann")), tc.refused)
			}, func() uint64 { return lb.Stats().NearHits })

			close(letGo)
			require.Equal(t, tc.status, <-done, "the first request's answer")
			require.Eventually(t, func() bool {
				return adaptertest.Serve(hb, adaptertest.Submit("ann")).Code == http.StatusCreated
			}, 10*time.Second, time.Millisecond, "B still refuses after A's %v key was freed", tc.mode)
		})
	}
}
