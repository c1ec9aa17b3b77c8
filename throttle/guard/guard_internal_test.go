package guard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/flow"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// newLock returns a Lock configured by c on a fresh memory store.
func newLock(t *testing.T, c throttle.LockConfig) *throttle.Lock {
	t.Helper()
	l, err := throttle.NewLock(memstore.New(), c)
	require.NoError(t, err)
	return l
}

// refused returns g's rejection of a call c, which must not go ahead.
func refused(t *testing.T, g *Guard, c flow.Call) Rejection {
	t.Helper()
	p, ref, ok := g.job.Begin(context.Background(), c)
	if ok {
		p.End(flow.Outcome{})
		require.FailNow(t, "admitted", "%+v", c)
	}
	return g.Rejection(ref)
}

// admit begins a call of id, which must go ahead, and returns its end.
func admit(t *testing.T, g *Guard, id string) func() {
	t.Helper()
	p, _, ok := g.job.Begin(context.Background(), flow.Call{ID: id})
	require.True(t, ok, "%q turned away", id)
	return func() { p.End(flow.Outcome{}) }
}

// written is what Write answers rej with.
func written(rej *Rejection) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	rej.Write(rec)
	return rec
}

// downStore fails every call as a refused connection does, naming internals.
type downStore struct{ store.Store }

var errDown = fmt.Errorf("dial tcp 10.0.0.9:6379: connection refused: %w", store.ErrNotApplied)

func (downStore) Acquire(context.Context, store.Request) (store.Grant, error) {
	return store.Grant{}, errDown
}

// statusError is a key error that asks for a status of its own.
type statusError int

func (e statusError) Error() string   { return "status " + strconv.Itoa(int(e)) }
func (e statusError) HTTPStatus() int { return int(e) }

// TestRejectionStatus checks each rejection's status, and that its
// RetryAfter is what Retry-After says (issue 37): whole seconds.
func TestRejectionStatus(t *testing.T) {
	tooLong := &keyfuncs.Error{Status: http.StatusRequestEntityTooLarge, Source: "body", Reason: "longer than 16 bytes"}
	quiet := throttle.Options{WhenStoreFails: throttle.FailClosed, Logger: slog.New(slog.DiscardHandler)}
	down, err := throttle.NewLock(downStore{memstore.New()}, throttle.LockConfig{Name: "submit", Options: quiet})
	require.NoError(t, err)
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	type guardOf func(t *testing.T) *Guard
	lock := func(c throttle.LockConfig, opts ...Option) guardOf {
		return func(t *testing.T) *Guard { return Lock(newLock(t, c), opts...) }
	}
	submit := lock(throttle.LockConfig{Name: "submit"})
	for _, c := range []struct {
		name   string
		g      guardOf
		held   bool // a first call holds the key
		ctx    context.Context
		err    error
		status int
		reason Reason
	}{
		{"dedupe", submit, true, nil, nil, 429, ReasonContended},
		{"cooldown", lock(throttle.LockConfig{Name: "report", Mode: throttle.Cooldown, TTL: 3 * time.Second}), true, nil, nil, 429, ReasonContended},
		{"exclusive", lock(throttle.LockConfig{Name: "job", Mode: throttle.Exclusive, TTL: 20 * time.Second}), true, nil, nil, 409, ReasonContended},
		{"WithStatus", lock(throttle.LockConfig{Name: "submit"}, WithStatus(http.StatusTooEarly)), true, nil, nil, 425, ReasonContended},
		{"WithStatus 200 ignored", lock(throttle.LockConfig{Name: "submit"}, WithStatus(200)), true, nil, nil, 429, ReasonContended},
		{"store down", func(*testing.T) *Guard { return Lock(down) }, false, nil, nil, 503, ReasonStoreUnavailable},
		{"canceled", submit, false, canceled, nil, 503, ReasonCanceled},
		{"key too long", submit, false, nil, tooLong, 413, ReasonBadKey},
		{"key too long, wrapped", submit, false, nil, fmt.Errorf("join: %w", tooLong), 413, ReasonBadKey},
		{"key missing", submit, false, nil, &keyfuncs.Error{Source: `header "X-User-ID"`, Reason: "missing"}, 400, ReasonBadKey},
		{"key plain error", submit, false, nil, errors.New("no identity"), 400, ReasonBadKey},
		{"key other 4xx", submit, false, nil, statusError(http.StatusUnauthorized), 401, ReasonBadKey},
		// The key is the client's fault, never a server error or a redirect.
		{"key 5xx", submit, false, nil, statusError(http.StatusInternalServerError), 400, ReasonBadKey},
		{"key 3xx", submit, false, nil, statusError(http.StatusFound), 400, ReasonBadKey},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := c.g(t)
			if c.held {
				defer admit(t, g, "u1")()
			}
			ctx := cmpCtx(c.ctx)
			p, ref, ok := g.job.Begin(ctx, flow.Call{ID: "u1", Err: c.err})
			if ok {
				p.End(flow.Outcome{})
				require.FailNow(t, "admitted")
			}
			rej := g.Rejection(ref)
			assert.Equal(t, c.status, rej.Status, "status")
			assert.Equal(t, c.reason, rej.Reason, "reason")
			assert.Equal(t, g.name, rej.Policy, "policy")
			rec := written(&rej)
			require.Equal(t, c.status, rec.Code, "answer")
			retry := rec.Header().Get("Retry-After")
			if rej.RetryAfter == 0 {
				require.Empty(t, retry, "Retry-After without RetryAfter")
			} else {
				require.Equal(t, strconv.Itoa(int(rej.RetryAfter/time.Second)), retry, "Retry-After against RetryAfter %v", rej.RetryAfter)
			}
			for _, leak := range []string{"10.0.0.9", "6379", "refused", "u1", "status 5"} {
				require.NotContains(t, rec.Body.String(), leak, "the body shows internals")
			}
		})
	}
}

func cmpCtx(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}

// serveStatus serves a request of id whose handler answers status.
func serveStatus(g *Guard, id string, status int) int {
	w := httptest.NewRecorder()
	var rej Rejection
	ok := g.Serve(w, httptest.NewRequest(http.MethodPost, "/", nil), flow.Call{ID: id}, &rej,
		func(*http.Request, *Capture) int { return status })
	if !ok {
		return rej.Status
	}
	return status
}

func TestDedupeWithFailed(t *testing.T) {
	g := Lock(newLock(t, throttle.LockConfig{Name: "submit"}), WithFailed(func(s int) bool { return s >= 500 }))
	serveStatus(g, "u1", http.StatusConflict)
	require.Equal(t, 429, serveStatus(g, "u1", 200), "409 released the key although WithFailed says it succeeded")
	serveStatus(g, "u2", http.StatusBadGateway)
	require.Equal(t, 200, serveStatus(g, "u2", 200), "502 kept the key although WithFailed says it failed")
}

// TestGuardPolicy checks what each constructor learns of its limiter and
// options: the RateLimit-Policy its answers give and the status of a
// rejection.
func TestGuardPolicy(t *testing.T) {
	st := memstore.New()
	lock, err := throttle.NewLock(st, throttle.LockConfig{Name: "job", Mode: throttle.Exclusive, TTL: time.Minute, Fence: true})
	require.NoError(t, err)
	quota, err := throttle.NewQuota(st, throttle.QuotaConfig{Name: "search"})
	require.NoError(t, err)
	replay, err := throttle.NewReplay(st, throttle.ReplayConfig{Name: "orders", TTL: time.Hour})
	require.NoError(t, err)
	for _, c := range []struct {
		g      *Guard
		status int
		field  string
	}{
		{Lock(lock), 409, `"job";q=1;qu="concurrent-requests"`},
		{Lock(lock, WithStatus(423)), 423, `"job";q=1;qu="concurrent-requests"`},
		{Quota(quota, throttle.Rate{Limit: 6, Window: time.Minute}), 429, `"search";q=6;w=60`},
		{Replay(replay), 429, `"orders";q=1;w=3600`},
	} {
		assert.Equal(t, c.status, c.g.status, "%s: status", c.g.name)
		rej := refused(t, c.g, flow.Call{Err: errors.New("no key")})
		assert.Equal(t, c.field, written(&rej).Header().Get("RateLimit-Policy"), "%s: RateLimit-Policy", c.g.name)
	}
	assert.PanicsWithValue(t, "guard: Lock needs a non-nil *throttle.Lock", func() { Lock(nil) })
	assert.PanicsWithValue(t, "guard: Quota needs a non-nil *throttle.Quota", func() { Quota(nil, throttle.Rate{Limit: 1, Window: time.Second}) })
	assert.PanicsWithValue(t, "guard: Replay needs a non-nil *throttle.Replay", func() { Replay(nil) })
	assert.Panics(t, func() { Quota(quota, throttle.Rate{}) }, "a rate that is not usable")
	assert.PanicsWithValue(t, "flow: Quota needs a non-nil rate function", func() {
		Quota(quota, (func(*http.Request, string) throttle.Rate)(nil))
	})
}
