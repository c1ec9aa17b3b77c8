package guard_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// failingRecords is a memstore whose first fails Record calls fail as a
// store outage does, and whose later ones are refused as too large when
// refuse is set (a full record budget).
type failingRecords struct {
	*memstore.Store
	fails  atomic.Int32
	refuse bool
}

func (s *failingRecords) Record(ctx context.Context, key, token string, rec []byte, ttl time.Duration) (store.Outcome, error) {
	if s.fails.Add(-1) >= 0 {
		return 0, errors.New("connection reset by peer")
	}
	if s.refuse && len(rec) > 40 { // the mark that says "not kept" is smaller
		return 0, store.ErrInvalid
	}
	return s.Store.Record(ctx, key, token, rec, ttl)
}

// runOriginal serves the first request of key k1 on g, a success whose
// handler writes a 201.
func runOriginal(t *testing.T, g *guard.Guard) {
	runKey(t, g, "k1", `{"id":"1"}`)
}

// runKey serves the first request of key on g, a success whose handler
// writes a 201 with body.
func runKey(t *testing.T, g *guard.Guard, key, body string) {
	t.Helper()
	ran, rej, _ := serveOrder(g, key, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(body))
	})
	require.Nil(t, rej)
	require.True(t, ran)
}

// duplicate serves a duplicate of key on g, whose handler must not run, and
// returns the rejection left to answer and what Serve wrote.
func duplicate(t *testing.T, g *guard.Guard, key string) (*guard.Rejection, *httptest.ResponseRecorder) {
	_, rej, w := serveOrder(g, key, func(http.ResponseWriter, *http.Request) { t.Error("a duplicate ran") })
	return rej, w
}

// replayed reports whether rec is a replayed 201.
func replayed(rec *httptest.ResponseRecorder) bool {
	return rec.Code == http.StatusCreated && rec.Header().Get("Idempotent-Replayed") == "true"
}

// TestRecordRetried: a record write that fails while the store has a
// moment's outage is written again, and the duplicate gets the replay.
func TestRecordRetried(t *testing.T) {
	st := &failingRecords{Store: memstore.New()}
	st.fails.Store(2)
	l, err := throttle.NewReplay(st, throttle.ReplayConfig{Name: "orders", TTL: time.Minute})
	require.NoError(t, err)
	g := guard.Replay(l)
	runOriginal(t, g)
	rej, rec := duplicate(t, g, "k1")
	require.Nil(t, rej)
	assert.True(t, replayed(rec), "answer %d %v", rec.Code, rec.Header())
	assert.Equal(t, uint64(2), l.Stats().StoreErrors)
}

// TestRecordNotKept: a response the store refuses to keep leaves a mark,
// so that a duplicate is told at once, without waiting for a record that
// never comes, that the request was processed and its response not kept.
func TestRecordNotKept(t *testing.T) {
	st := &failingRecords{Store: memstore.New(), refuse: true}
	l, err := throttle.NewReplay(st, throttle.ReplayConfig{Name: "orders", TTL: time.Minute, Wait: time.Minute})
	require.NoError(t, err)
	g := guard.Replay(l)
	runOriginal(t, g)
	done := make(chan *guard.Rejection, 1)
	go func() {
		rej, _ := duplicate(t, g, "k1")
		done <- rej
	}()
	select {
	case rej := <-done:
		require.NotNil(t, rej)
		assert.Equal(t, guard.ReasonNotKept, rej.Reason)
		assert.Equal(t, http.StatusConflict, rej.Status)
		assert.Greater(t, rej.RetryAfter, 50*time.Second, "until the window ends")
		assert.Equal(t, uint64(1), l.Stats().NotKept)
		w := httptest.NewRecorder()
		rej.Write(w)
		assert.Contains(t, w.Body.String(), "#ReasonNotKept")
	case <-time.After(30 * time.Second):
		require.Fail(t, "the duplicate waited for a record that never comes")
	}
}

// TestRecordLater: a record write that fails for longer than the retries in
// Finish goes on in the background, and a duplicate that comes once the
// store is back gets the replay.
func TestRecordLater(t *testing.T) {
	st := &failingRecords{Store: memstore.New()}
	st.fails.Store(7) // Finish tries six times
	l, err := throttle.NewReplay(st, throttle.ReplayConfig{Name: "orders", TTL: time.Minute, Wait: -1})
	require.NoError(t, err)
	g := guard.Replay(l)
	runOriginal(t, g)
	require.Eventually(t, func() bool {
		rej, rec := duplicate(t, g, "k1")
		return rej == nil && replayed(rec)
	}, 20*time.Second, 100*time.Millisecond)
	assert.Equal(t, uint64(7), l.Stats().StoreErrors)
}

// TestRecordBudgetSpent: once a memstore's record budget is spent, a
// response that does not fit is not kept, and its duplicate is told so at
// once (the mark that says so always fits), not after a wait.
func TestRecordBudgetSpent(t *testing.T) {
	st := memstore.New(memstore.WithMaxKeys(16), memstore.WithMaxRecordBytes(2000)) // one shard
	l, err := throttle.NewReplay(st, throttle.ReplayConfig{Name: "orders", TTL: time.Minute, Wait: time.Minute})
	require.NoError(t, err)
	g := guard.Replay(l)
	runKey(t, g, "k1", strings.Repeat("x", 1800)) // most of the record bytes (one policy alone may use them all)
	runKey(t, g, "k2", strings.Repeat("y", 300))  // does not fit
	done := make(chan *guard.Rejection, 1)
	go func() {
		rej, _ := duplicate(t, g, "k2")
		done <- rej
	}()
	select {
	case rej := <-done:
		require.NotNil(t, rej)
		assert.Equal(t, guard.ReasonNotKept, rej.Reason)
	case <-time.After(30 * time.Second):
		require.Fail(t, "the duplicate waited for a record that never comes")
	}
	rej, rec := duplicate(t, g, "k1")
	require.Nil(t, rej)
	assert.True(t, replayed(rec))
	assert.Equal(t, uint64(1), l.Stats().NotKept)
}
