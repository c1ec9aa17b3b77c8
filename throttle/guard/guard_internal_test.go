package guard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// Guard itself.

// newLock returns a Lock configured by c on a fresh memory store.
func newLock(t *testing.T, c throttle.LockConfig) *throttle.Lock {
	t.Helper()
	l, err := throttle.NewLock(memstore.New(), c)
	require.NoError(t, err)
	return l
}

// mustAdmit begins a request for id and fails the test unless it is
// admitted.
func mustAdmit(t *testing.T, g *Guard, id string) (context.Context, ticket) {
	t.Helper()
	ctx, tk, rej := g.begin1(context.Background(), id)
	require.Nil(t, rej, "begin(%q) turned away", id)
	return ctx, tk
}

// held reports whether a request for id is now turned away as contended. A
// probe that is admitted ends as a failed request would.
func held(t *testing.T, g *Guard, id string) bool {
	t.Helper()
	ctx, tk, rej := g.begin1(context.Background(), id)
	if rej == nil {
		tk.finish(ctx, http.StatusInternalServerError, false)
		return false
	}
	require.Equal(t, ReasonContended, rej.Reason, "probe turned away for %v, want contended", rej.Reason)
	return true
}

// brokenStore fails every call with an error naming internals. Like a real
// store's refused connection, the error says the call changed nothing
// (store.ErrNotApplied), so the Lock has no orphan to clean up.
type brokenStore struct{ releases atomic.Int32 }

var errBroken = fmt.Errorf("dial tcp 10.0.0.9:6379: connection refused: %w", store.ErrNotApplied)

func (*brokenStore) Acquire(context.Context, store.Request) (store.Grant, error) {
	return store.Grant{}, errBroken
}

func (s *brokenStore) Release(context.Context, string, string) (store.Outcome, error) {
	s.releases.Add(1)
	return 0, errBroken
}

func (*brokenStore) Extend(context.Context, string, string, time.Duration) (store.Outcome, error) {
	return 0, errBroken
}

// quiet keeps the limiter's store-error warnings out of the test output.
var quiet = slog.New(slog.DiscardHandler)

func TestBeginContended(t *testing.T) {
	for _, c := range []struct {
		name   string
		c      throttle.LockConfig
		opts   []Option
		status int
		window time.Duration
	}{
		{"dedupe", throttle.LockConfig{Name: "submit"}, nil, 429, 5 * time.Second},
		{"cooldown", throttle.LockConfig{Name: "report", Mode: throttle.Cooldown, TTL: 3 * time.Second}, nil, 429, 3 * time.Second},
		{"exclusive", throttle.LockConfig{Name: "job", Mode: throttle.Exclusive, TTL: 20 * time.Second}, nil, 409, 20 * time.Second},
		{"WithStatus", throttle.LockConfig{Name: "submit"}, []Option{WithStatus(http.StatusTooEarly)}, 425, 5 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := Lock(newLock(t, c.c), c.opts...)
			ctx, first := mustAdmit(t, g, "u1")
			defer first.finish(ctx, http.StatusOK, false)

			parent := context.Background()
			got, tk, rej := g.begin1(parent, "u1")
			if rej == nil {
				tk.finish(got, http.StatusOK, false)
				require.FailNow(t, "second request admitted")
			}
			assert.Equal(t, c.status, rej.Status, "status")
			assert.Equal(t, ReasonContended, rej.Reason, "reason")
			assert.Equal(t, c.c.Name, rej.Policy, "policy")
			assert.Same(t, g, rej.g, "the rejection's guard")
			assert.Equal(t, c.c.Mode, rej.g.mode, "mode")
			assert.Equal(t, c.window, rej.g.window, "window")
			assert.Positive(t, rej.RetryAfter, "RetryAfter")
			assert.LessOrEqual(t, rej.RetryAfter, c.window, "RetryAfter")
			require.ErrorIs(t, rej.Err, throttle.ErrContended)
			require.Equal(t, parent, got, "a turned-away request got a new context")
			rec := httptest.NewRecorder()
			rej.Write(rec)
			require.Equal(t, c.status, rec.Code, "answer")
			n, err := strconv.Atoi(rec.Header().Get("Retry-After"))
			require.NoError(t, err, "Retry-After %q", rec.Header().Get("Retry-After"))
			require.GreaterOrEqual(t, n, 1, "Retry-After")
			require.LessOrEqual(t, time.Duration(n)*time.Second, c.window, "Retry-After")
		})
	}
}

func TestBeginStoreFailsOpen(t *testing.T) {
	for _, c := range []throttle.LockConfig{
		{Name: "submit", Options: throttle.Options{Logger: quiet}}, // open by default
		{Name: "submit", Fence: true, Options: throttle.Options{Logger: quiet}},
		{Name: "job", Mode: throttle.Exclusive, Options: throttle.Options{WhenStoreFails: throttle.FailOpen, Logger: quiet}},
	} {
		t.Run(fmt.Sprintf("%v fence=%v", c.Mode, c.Fence), func(t *testing.T) {
			st := &brokenStore{}
			l, err := throttle.NewLock(st, c)
			require.NoError(t, err)
			type ctxKey struct{}
			parent := context.WithValue(context.Background(), ctxKey{}, 1)
			ctx, tk, rej := Lock(l).begin1(parent, "u1")
			require.Nil(t, rej, "turned away under a fail-open lock")
			require.Equal(t, parent, ctx, "an unguarded request got a new context")
			require.Nil(t, throttle.LeaseFrom(ctx), "an unguarded request got a context with a lease")
			ran := 0
			tk.run(ctx, func() int { ran++; return http.StatusInternalServerError })
			require.Equal(t, 1, ran, "handler runs")
			// A failing handler, or a panicking one, has nothing to release.
			require.Equal(t, "boom", runPanicking(ctx, tk, "boom"), "recovered value")
			tk.finish(ctx, http.StatusInternalServerError, true)
			require.Zero(t, st.releases.Load(), "Release calls of a ticket that holds nothing")
			require.Equal(t, uint64(1), l.Stats().FailedOpen, "Stats.FailedOpen")
		})
	}
}

func TestBeginStoreFailsClosed(t *testing.T) {
	for _, c := range []throttle.LockConfig{
		{Name: "submit", Options: throttle.Options{WhenStoreFails: throttle.FailClosed, Logger: quiet}},
		{Name: "job", Mode: throttle.Exclusive, Options: throttle.Options{Logger: quiet}}, // closed by default
	} {
		t.Run(c.Mode.String(), func(t *testing.T) {
			l, err := throttle.NewLock(&brokenStore{}, c)
			require.NoError(t, err)
			_, _, rej := Lock(l).begin1(context.Background(), "u1")
			require.NotNil(t, rej, "admitted under a fail-closed lock")
			assert.Equal(t, http.StatusServiceUnavailable, rej.Status, "status")
			assert.Equal(t, ReasonStoreUnavailable, rej.Reason, "reason")
			assert.Equal(t, time.Second, rej.RetryAfter, "RetryAfter")
			assert.Equal(t, c.Name, rej.Policy, "policy")
			require.ErrorIs(t, rej.Err, throttle.ErrStore)
			require.ErrorIs(t, rej.Err, errBroken, "Err wraps the store's error")
			rec := httptest.NewRecorder()
			rej.Write(rec)
			h := rec.Header()
			require.Equal(t, 503, rec.Code, "answer")
			require.Equal(t, "1", h.Get("Retry-After"), "Retry-After")
			require.Empty(t, h.Get("RateLimit"), "RateLimit")
			for _, leak := range []string{"10.0.0.9", "6379", "refused", "store acquire", "u1"} {
				require.NotContains(t, rec.Body.String(), leak, "the body shows internals")
			}
		})
	}
}

func TestBeginCanceled(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	broken, err := throttle.NewLock(&brokenStore{}, throttle.LockConfig{Name: "submit",
		Options: throttle.Options{WhenStoreFails: throttle.FailClosed, Logger: quiet}})
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		ctx  context.Context
		l    *throttle.Lock
		err  error
	}{
		{"canceled", canceled, newLock(t, throttle.LockConfig{Name: "submit"}), context.Canceled},
		{"deadline", expired, newLock(t, throttle.LockConfig{Name: "submit"}), context.DeadlineExceeded},
		// The client is gone: that, not the store, is the reason.
		{"store down", canceled, broken, context.Canceled},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := Lock(c.l)
			_, _, rej := g.begin1(c.ctx, "u1")
			require.NotNil(t, rej, "admitted")
			require.Equal(t, ReasonCanceled, rej.Reason, "reason")
			require.ErrorIs(t, rej.Err, c.err)
			if c.l != broken {
				require.False(t, held(t, g, "u1"), "a canceled request took the key")
			}
		})
	}
}

// statusError is a key error that asks for a status of its own.
type statusError int

func (e statusError) Error() string   { return "status " + strconv.Itoa(int(e)) }
func (e statusError) HTTPStatus() int { return int(e) }

func TestBadKey(t *testing.T) {
	tooLong := &keyfuncs.Error{Status: http.StatusRequestEntityTooLarge, Source: "body", Reason: "longer than 16 bytes"}
	l := newLock(t, throttle.LockConfig{Name: "submit", Mode: throttle.Cooldown, TTL: 2 * time.Second})
	for _, c := range []struct {
		name   string
		err    error
		status int
	}{
		{"too long", tooLong, 413},
		{"wrapped", fmt.Errorf("join: %w", tooLong), 413},
		{"missing", &keyfuncs.Error{Source: `header "X-User-ID"`, Reason: "missing"}, 400},
		{"plain", errors.New("no identity"), 400},
		{"other 4xx", statusError(http.StatusUnauthorized), 401},
		// The key is the client's fault, never a server error or a redirect.
		{"5xx", statusError(http.StatusInternalServerError), 400},
		{"3xx", statusError(http.StatusFound), 400},
	} {
		t.Run(c.name, func(t *testing.T) {
			rej := Lock(l).badInput(c.err, ReasonBadKey)
			require.NotNil(t, rej)
			assert.Equal(t, c.status, rej.Status, "status")
			assert.Equal(t, ReasonBadKey, rej.Reason, "reason")
			assert.Zero(t, rej.RetryAfter, "RetryAfter")
			assert.Equal(t, "submit", rej.Policy, "policy")
			assert.Equal(t, throttle.Cooldown, rej.g.mode, "mode")
			assert.Equal(t, 2*time.Second, rej.g.window, "window")
			require.ErrorIs(t, rej.Err, c.err)
			rec := httptest.NewRecorder()
			rej.Write(rec)
			require.Equal(t, c.status, rec.Code, "answer")
			require.Empty(t, rec.Header().Get("Retry-After"), "Retry-After")
		})
	}
	s := l.Stats()
	require.Zero(t, s.Acquired+s.Rejected, "badInput used the store")
}

func TestDedupeStatus(t *testing.T) {
	for _, c := range []struct {
		status int
		kept   bool
	}{{200, true}, {201, true}, {304, true}, {404, false}, {500, false}, {503, false}} {
		t.Run(strconv.Itoa(c.status), func(t *testing.T) {
			g := Lock(newLock(t, throttle.LockConfig{Name: "submit"}))
			ctx, tk := mustAdmit(t, g, "u1")
			tk.run(ctx, func() int { return c.status })
			require.Equal(t, c.kept, held(t, g, "u1"), "after %d the key is held", c.status)
		})
	}
}

func TestDedupeWithFailed(t *testing.T) {
	g := Lock(newLock(t, throttle.LockConfig{Name: "submit"}), WithFailed(func(s int) bool { return s >= 500 }))
	ctx, tk := mustAdmit(t, g, "u1")
	tk.run(ctx, func() int { return http.StatusConflict })
	require.True(t, held(t, g, "u1"), "409 released the key although WithFailed says it succeeded")
	ctx, tk = mustAdmit(t, g, "u2")
	tk.run(ctx, func() int { return http.StatusBadGateway })
	require.False(t, held(t, g, "u2"), "502 kept the key although WithFailed says it failed")
}

func TestCooldownKeepsAfterFailure(t *testing.T) {
	g := Lock(newLock(t, throttle.LockConfig{Name: "report", Mode: throttle.Cooldown}))
	ctx, tk := mustAdmit(t, g, "u1")
	tk.run(ctx, func() int { return http.StatusInternalServerError })
	require.True(t, held(t, g, "u1"), "Cooldown released the key after a 500")
}

type panicValue struct{ n int }

// runPanicking runs a handler that panics with v under tk and returns what
// reached the caller.
func runPanicking(ctx context.Context, tk ticket, v any) (got any) {
	defer func() { got = recover() }()
	tk.run(ctx, func() int { panic(v) })
	return nil
}

func TestRunPanic(t *testing.T) {
	for _, c := range []struct {
		mode     throttle.Mode
		released bool
	}{{throttle.Dedupe, true}, {throttle.Cooldown, false}, {throttle.Exclusive, true}} {
		t.Run(c.mode.String(), func(t *testing.T) {
			g := Lock(newLock(t, throttle.LockConfig{Name: "submit", Mode: c.mode}))
			ctx, tk := mustAdmit(t, g, "u1")
			want := &panicValue{42}
			require.Same(t, want, runPanicking(ctx, tk, want), "recovered value: the handler's own")
			require.Equal(t, !c.released, held(t, g, "u1"), "after a panic the key is held")
		})
	}
}

func TestRunGoexit(t *testing.T) {
	g := Lock(newLock(t, throttle.LockConfig{Name: "submit"}))
	ctx, tk := mustAdmit(t, g, "u1")
	done := make(chan struct{})
	go func() {
		defer close(done)
		tk.run(ctx, func() int { runtime.Goexit(); return http.StatusOK })
	}()
	<-done
	require.False(t, held(t, g, "u1"), "a handler that called runtime.Goexit kept the key")
}

func TestExclusive(t *testing.T) {
	g := Lock(newLock(t, throttle.LockConfig{Name: "job", Mode: throttle.Exclusive, Fence: true}))
	ctx, tk := mustAdmit(t, g, "c1")
	ls := throttle.LeaseFrom(ctx)
	require.NotNil(t, ls, "the handler's context carries no lease")
	require.Positive(t, ls.Fence(), "the lease's fence")
	tk.run(ctx, func() int {
		assert.NoError(t, ctx.Err(), "the handler's context ended before it ran")
		assert.True(t, held(t, g, "c1"), "the key is free while the handler runs")
		return http.StatusCreated // a success does not keep it either
	})
	require.Error(t, ctx.Err(), "the handler's context outlives the hold")
	require.False(t, held(t, g, "c1"), "Exclusive kept the key after run")
}

func TestBeginContext(t *testing.T) {
	parent := context.Background()
	for _, c := range []struct {
		name  string
		c     throttle.LockConfig
		lease bool
	}{
		{"plain", throttle.LockConfig{Name: "submit"}, false},
		{"fence", throttle.LockConfig{Name: "submit", Fence: true}, true},
		{"reentrant", throttle.LockConfig{Name: "submit", Reentrant: true}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, tk, rej := Lock(newLock(t, c.c)).begin1(parent, "u1")
			require.Nil(t, rej, "turned away")
			defer tk.finish(ctx, http.StatusOK, false)
			require.True(t, tk.lease != nil || (tk.hold != throttle.Hold{}), "an admitted lock request holds its key")
			require.Equal(t, c.lease, tk.lease != nil, "a lease (Fence and Reentrant need one)")
			require.Equal(t, c.lease, throttle.LeaseFrom(ctx) != nil, "lease in the context")
			// Adapters skip WithContext when nothing was added.
			if !c.lease {
				require.Equal(t, parent, ctx, "begin returned a new context with nothing in it")
			}
		})
	}
}

func TestFinish(t *testing.T) {
	g := Lock(newLock(t, throttle.LockConfig{Name: "submit"}))

	// The release runs although the request's context ended.
	parent, cancel := context.WithCancel(context.Background())
	ctx, tk, rej := g.begin1(parent, "u1")
	require.Nil(t, rej, "turned away")
	cancel()
	tk.finish(ctx, http.StatusInternalServerError, false)
	require.False(t, held(t, g, "u1"), "finish did not release with a canceled context")

	// Finishing again never frees the key of the request admitted since.
	ctx, first := mustAdmit(t, g, "u2")
	first.finish(ctx, http.StatusInternalServerError, false)
	ctx2, second := mustAdmit(t, g, "u2")
	defer second.finish(ctx2, http.StatusOK, false)
	first.finish(ctx, http.StatusInternalServerError, true)
	require.True(t, held(t, g, "u2"), "a second finish released another request's key")
}

// TestReasonLabels pins the labels logs and metrics use.
func TestReasonLabels(t *testing.T) {
	for r, want := range map[Reason]string{
		ReasonContended:        "contended",
		ReasonBadKey:           "bad-key",
		ReasonStoreUnavailable: "store-unavailable",
		ReasonCanceled:         "canceled",
		ReasonBadCost:          "bad-cost",
		ReasonInFlight:         "in-flight",
		ReasonKeyReused:        "key-reused",
		ReasonNotKept:          "not-kept",
	} {
		assert.Equal(t, want, string(r))
	}
}

func (*brokenStore) Delete(context.Context, ...string) error { return errBroken }
