package adaptertest

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
)

// The fields guard.LegacyHeaders adds, canonical as http.Header keeps them.
const (
	LegacyLimit     = "X-Ratelimit-Limit"
	LegacyRemaining = "X-Ratelimit-Remaining"
	LegacyReset     = "X-Ratelimit-Reset"
)

// CheckLegacy fails the test unless h's legacy fields say what its
// RateLimit fields for the policy name say: X-RateLimit-Limit the
// policy's q; X-RateLimit-Remaining and X-RateLimit-Reset RateLimit's r
// and t, Reset absent without t, both absent without RateLimit.
func CheckLegacy(t testing.TB, h http.Header, name string) {
	t.Helper()
	require.Equal(t, []string{strconv.FormatInt(PolicyOf(t, h, name).Q, 10)}, h.Values(LegacyLimit), LegacyLimit)
	if len(h.Values(RateLimitHeader)) == 0 {
		require.Empty(t, h.Values(LegacyRemaining), LegacyRemaining+" without RateLimit")
		require.Empty(t, h.Values(LegacyReset), LegacyReset+" without RateLimit")
		return
	}
	f := LimitOf(t, h, name)
	require.Equal(t, []string{strconv.FormatInt(f.R, 10)}, h.Values(LegacyRemaining), LegacyRemaining)
	if !f.HasT {
		require.Empty(t, h.Values(LegacyReset), LegacyReset+" without RateLimit's t")
		return
	}
	require.Equal(t, []string{strconv.FormatInt(f.T, 10)}, h.Values(LegacyReset), LegacyReset)
}

// noLegacy fails the test when h has any legacy field.
func noLegacy(t testing.TB, h http.Header) {
	t.Helper()
	for _, k := range []string{LegacyLimit, LegacyRemaining, LegacyReset} {
		require.Empty(t, h.Values(k), "%s without LegacyHeaders", k)
	}
}

// testLegacyHeaders: with guard.LegacyHeaders every answer carrying the
// RateLimit fields, admitted, refused, replayed or let through by a dry
// run, carries the X-RateLimit-* fields saying the same; without it, none.
func testLegacyHeaders(t *testing.T, a Adapter) {
	t.Run("Dedupe", func(t *testing.T) {
		g, _ := LockGuard(t, throttle.LockConfig{Name: "submit"}, guard.LegacyHeaders())
		h := a.Wrap(g, UserKey(), &counter{})
		for _, want := range []int{http.StatusCreated, http.StatusTooManyRequests, http.StatusBadRequest} {
			user := "u1"
			if want == http.StatusBadRequest {
				user = "" // RateLimit-Policy alone: X-RateLimit-Limit alone
			}
			rec := Serve(h, Submit(user))
			Status(t, rec, want)
			CheckLegacy(t, rec.Header(), "submit")
		}
		require.Equal(t, "1", Serve(h, Submit("u1")).Header().Get(LegacyLimit))
		plain, _ := LockGuard(t, throttle.LockConfig{Name: "submit"})
		h = a.Wrap(plain, UserKey(), &counter{})
		noLegacy(t, Serve(h, Submit("u1")).Header())
		noLegacy(t, Serve(h, Submit("u1")).Header())
	})
	t.Run("Exclusive", func(t *testing.T) {
		g, _ := LockGuard(t, throttle.LockConfig{Name: "job", Mode: throttle.Exclusive}, guard.LegacyHeaders())
		b := newBlocker()
		h := a.Wrap(g, UserKey(), b)
		first := background(h, Submit("c1"))
		<-b.entered
		rec := Serve(h, Submit("c1"))
		Status(t, rec, http.StatusConflict)
		CheckLegacy(t, rec.Header(), "job")
		require.NotEmpty(t, rec.Header().Get(LegacyReset), LegacyReset+" of a refusal")
		close(b.release)
		require.Equal(t, http.StatusOK, first())
		rec = Serve(h, Submit("c2")) // a holder's: no t, no Reset
		Status(t, rec, http.StatusOK)
		CheckLegacy(t, rec.Header(), "job")
		require.Empty(t, rec.Header().Values(LegacyReset), "the holder's "+LegacyReset)
	})
	t.Run("Quota", func(t *testing.T) {
		q := NewQuota(t, throttle.QuotaConfig{Name: "search"})
		g := guard.Quota(q, throttle.Rate{Limit: 3, Window: time.Minute}, guard.LegacyHeaders())
		h := a.Wrap(g, UserKey(), &counter{})
		for i, want := range []int{201, 201, 201, 429} {
			rec := Serve(h, Submit("u1"))
			Status(t, rec, want)
			CheckLegacy(t, rec.Header(), "search")
			require.Equal(t, "3", rec.Header().Get(LegacyLimit), "request %d: %s", i+1, LegacyLimit)
			require.Equal(t, strconv.Itoa(max(2-i, 0)), rec.Header().Get(LegacyRemaining), "request %d: %s", i+1, LegacyRemaining)
		}
	})
	t.Run("DryRun", func(t *testing.T) {
		q := NewQuota(t, throttle.QuotaConfig{Name: "search", Options: throttle.Options{DryRun: true, Logger: quiet}})
		h := a.Wrap(guard.Quota(q, throttle.Rate{Limit: 1, Window: time.Minute}, guard.LegacyHeaders()), UserKey(), &counter{})
		for range 2 {
			rec := Serve(h, Submit("u1"))
			Status(t, rec, http.StatusCreated)
			CheckLegacy(t, rec.Header(), "search")
			require.Equal(t, "0", rec.Header().Get(LegacyRemaining))
		}
	})
	t.Run("Replay", func(t *testing.T) {
		h := a.Wrap(guard.Replay(NewReplay(t, ReplayConfig()), guard.LegacyHeaders()), ReplayKey(), &Orders{})
		for range 2 {
			rec := Serve(h, Order("alice", "k1", "{}"))
			Status(t, rec, http.StatusCreated)
			CheckLegacy(t, rec.Header(), "orders")
			require.NotEmpty(t, rec.Header().Get(LegacyReset), LegacyReset)
		}
	})
}
