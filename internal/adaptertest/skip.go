package adaptertest

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
)

// InternalHeader marks the suite's requests that guard.Skip lets through.
const InternalHeader = "X-Internal-Caller"

// internal is the suite's guard.Skip function: a request carrying
// InternalHeader goes through unguarded.
func internal(r *http.Request) bool { return r.Header.Get(InternalHeader) != "" }

// skipped returns a Submit request from user marked for guard.Skip.
func skipped(user string) *http.Request {
	r := Submit(user)
	r.Header.Set(InternalHeader, "health-check")
	return r
}

// noLimitFields fails the test when h carries any RateLimit field, its
// legacy forms or Retry-After.
func noLimitFields(t testing.TB, h http.Header) {
	t.Helper()
	for _, k := range []string{PolicyHeader, RateLimitHeader, "Retry-After", LegacyLimit, LegacyRemaining, LegacyReset} {
		require.Empty(t, h.Values(k), "%s on a skipped request", k)
	}
}

// testSkip: a request guard.Skip lets through is never limited, carries no
// RateLimit field and costs nothing (no store call, nothing held or
// charged), even while its key is held or with no key at all; the others
// are limited as ever.
func testSkip(t *testing.T, a Adapter) {
	t.Run("Lock", func(t *testing.T) {
		l := NewLock(t, throttle.LockConfig{Name: "submit"})
		c := &counter{}
		h := a.Wrap(guard.Lock(l, a.skip(internal), guard.LegacyHeaders()), UserKey(), c)
		for _, user := range []string{"u1", "u1", "u1", ""} {
			rec := Serve(h, skipped(user))
			Status(t, rec, http.StatusCreated)
			noLimitFields(t, rec.Header())
		}
		untouched(t, l)
		rec := Serve(h, Submit("u1"))
		Status(t, rec, http.StatusCreated)
		CheckLimit(t, rec.Header(), "submit", 0, 5, 5)
		Status(t, Serve(h, Submit("u1")), http.StatusTooManyRequests)
		rec = Serve(h, skipped("u1")) // the key is held: still through
		Status(t, rec, http.StatusCreated)
		noLimitFields(t, rec.Header())
		require.Equal(t, int32(6), c.calls.Load(), "handler runs")
	})
	t.Run("Quota", func(t *testing.T) {
		q := NewQuota(t, throttle.QuotaConfig{Name: "search"})
		g := guard.Quota(q, throttle.Rate{Limit: 2, Window: time.Minute}, a.skip(internal))
		h := a.Wrap(g, UserKey(), &counter{})
		for range 5 {
			rec := Serve(h, skipped("u1"))
			Status(t, rec, http.StatusCreated)
			noLimitFields(t, rec.Header())
		}
		untouched(t, q)
		// Nothing was charged: the whole quota is left.
		CheckLimit(t, Serve(h, Submit("u1")).Header(), "search", 1, 1, 30)
		CheckLimit(t, Serve(h, Submit("u1")).Header(), "search", 0, 1, 60)
		Status(t, Serve(h, Submit("u1")), http.StatusTooManyRequests)
		Status(t, Serve(h, skipped("u1")), http.StatusCreated)
	})
	t.Run("Replay", func(t *testing.T) {
		r := NewReplay(t, ReplayConfig())
		o := &Orders{}
		h := a.Wrap(guard.Replay(r, a.skip(internal)), ReplayKey(), o)
		for i := range 3 {
			req := Order("alice", "k1", "{}")
			req.Header.Set(InternalHeader, "batch")
			rec := Serve(h, req)
			require.Equal(t, i+1, orderID(t, rec), "a skipped request is never replayed")
			noLimitFields(t, rec.Header())
		}
		untouched(t, r)
		id := orderID(t, Serve(h, Order("alice", "k1", "{}")))
		checkReplayed(t, Serve(h, Order("alice", "k1", "{}")), id)
	})
}
