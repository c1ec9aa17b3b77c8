package guard_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/nethttp"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
)

// floodStore returns the default memory store and n, or, under -race or
// -short, a store of an eighth of the default bound and n/8: the same fill.
func floodStore(t *testing.T, n int) (*memstore.Store, int) {
	if raced || testing.Short() {
		t.Logf("scaled to 1/8: -race or -short")
		return memstore.New(memstore.WithMaxKeys(1 << 17)), n / 8
	}
	return memstore.New(), n
}

// lockServer returns a handler that answers 202 behind a lock of mode on s,
// keyed by the X-Account header, and the lock.
func lockServer(t *testing.T, s *memstore.Store, c throttle.LockConfig) (http.Handler, *throttle.Lock) {
	t.Helper()
	l, err := throttle.NewLock(s, c)
	require.NoError(t, err)
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) })
	return nethttp.Middleware(guard.Lock(l), keyfuncs.Header("X-Account"))(ok), l
}

// post sends a POST for account to h.
func post(h http.Handler, account string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/password-reset", nil)
	req.Header.Set("X-Account", account)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// floodHTTP sends n one-off accounts to h; each must be held: 202 with its
// RateLimit field (a request let through unguarded has none).
func floodHTTP(t *testing.T, h http.Handler, n int) {
	t.Helper()
	for i := range n {
		if rec := post(h, "flood-"+strconv.Itoa(i)); rec.Code != http.StatusAccepted || rec.Header().Get("RateLimit") == "" {
			require.FailNow(t, "a one-off account not held", "account %d of %d: %d %v", i, n, rec.Code, rec.Header())
		}
	}
}

// TestPasswordResetFlood (issue 36): 560,000 one-off accounts on a Cooldown
// password reset of the default memory store are each held, and then a
// victim's second reset is refused 429. Before, a policy could hold half
// the store: the flood's later accounts and every reset of the victim were
// let through unguarded (10 of 10 answered 202, a mail bomb).
func TestPasswordResetFlood(t *testing.T) {
	s, n := floodStore(t, 560_000)
	h, l := lockServer(t, s, throttle.LockConfig{Name: "password-reset", Mode: throttle.Cooldown, TTL: time.Hour})
	floodHTTP(t, h, n)
	require.Equal(t, http.StatusAccepted, post(h, "victim").Code, "the victim's first reset")
	for i := range 9 {
		rec := post(h, "victim")
		require.Equal(t, http.StatusTooManyRequests, rec.Code, "the victim's reset %d", i+2)
		require.NotEmpty(t, rec.Header().Get("Retry-After"))
	}
	require.Equal(t, throttle.Stats{Acquired: uint64(n) + 1, Rejected: 9}, l.Stats())
}

// TestDedupeFloodThreeCopies (issue 36): after a flood of one-off ids on a
// Dedupe lock, three copies of a new user's request get one admission; when
// the store is really full of live locks, all three get 503 with
// Retry-After. Never three admissions, as before (all three got 200).
func TestDedupeFloodThreeCopies(t *testing.T) {
	c := throttle.LockConfig{Name: "submit", TTL: 10 * time.Minute}
	copies := func(h http.Handler) (codes []int) {
		for range 3 {
			rec := post(h, "new-user")
			if rec.Code != http.StatusAccepted {
				require.NotEmpty(t, rec.Header().Get("Retry-After"), "%d", rec.Code)
			}
			codes = append(codes, rec.Code)
		}
		return codes
	}
	t.Run("room", func(t *testing.T) {
		s, n := floodStore(t, 600_000)
		h, _ := lockServer(t, s, c)
		floodHTTP(t, h, n)
		require.Equal(t, []int{202, 429, 429}, copies(h))
	})
	t.Run("full", func(t *testing.T) {
		h, l := lockServer(t, memstore.New(memstore.WithMaxKeys(16)), c)
		floodHTTP(t, h, 16)
		require.Equal(t, []int{503, 503, 503}, copies(h))
		require.Equal(t, throttle.Stats{Acquired: 16, Full: 3}, l.Stats())
	})
}

// TestReplayFullStore (issue 36): a Replay guard on a small store keeps as
// many orders as the store holds (one policy may fill it); a new order then
// gets 503 with Retry-After, its handler not run, even under FailOpen, and
// counts in Stats.Full. Before, the policy held half the store and a full
// store failed open: the order ran unguarded.
func TestReplayFullStore(t *testing.T) {
	r, err := throttle.NewReplay(memstore.New(memstore.WithMaxKeys(16)), throttle.ReplayConfig{Name: "orders", TTL: time.Minute,
		Options: throttle.Options{WhenStoreFails: throttle.FailOpen}})
	require.NoError(t, err)
	ran := 0
	h := nethttp.Middleware(guard.Replay(r), keyfuncs.Header("X-Account"))(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		ran++
		w.WriteHeader(http.StatusCreated)
	}))
	for i := range 16 {
		rec := post(h, "order-"+strconv.Itoa(i))
		require.Equal(t, http.StatusCreated, rec.Code, "order %d", i)
	}
	rec := post(h, "order-new")
	require.Equal(t, http.StatusServiceUnavailable, rec.Code, "a new order on a full store")
	require.Equal(t, "1", rec.Header().Get("Retry-After"))
	require.Equal(t, 16, ran, "the new order ran")
	rec = post(h, "order-3")
	require.Equal(t, http.StatusCreated, rec.Code, "a retry of a kept order")
	require.Equal(t, "true", rec.Header().Get("Idempotent-Replayed"))
	st := r.Stats()
	require.Equal(t, uint64(1), st.Full, "%+v", st)
	require.Zero(t, st.FailedOpen+st.StoreErrors, "%+v", st)
}
