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
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// Guard itself.

func newLimiter(t *testing.T, p throttle.Policy) *throttle.Limiter {
	t.Helper()
	l, err := throttle.New(memstore.New(), p)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// admit begins a request for id and fails the test unless it is admitted.
func mustAdmit(t *testing.T, l *throttle.Limiter, id string) (context.Context, ticket) {
	t.Helper()
	ctx, tk, rej := New(l).begin1(context.Background(), id)
	if rej != nil {
		t.Fatalf("Begin(%q) turned away: %+v", id, *rej)
	}
	return ctx, tk
}

// held reports whether a request for id is now turned away as contended. A
// probe that is admitted ends as a failed request would.
func held(t *testing.T, l *throttle.Limiter, id string) bool {
	t.Helper()
	ctx, tk, rej := New(l).begin1(context.Background(), id)
	if rej == nil {
		tk.finish(ctx, http.StatusInternalServerError, false)
		return false
	}
	if rej.Reason != ReasonContended {
		t.Fatalf("probe turned away for %v, want contended", rej.Reason)
	}
	return true
}

// brokenStore fails every call with an error naming internals. Like a real
// store's refused connection, the error says the call changed nothing
// (store.ErrNotApplied), so the Limiter has no orphan to clean up.
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
		p      throttle.Policy
		status int
		window time.Duration
	}{
		{"dedupe", throttle.Policy{Name: "submit"}, 429, throttle.DefaultWindow},
		{"cooldown", throttle.Policy{Name: "report", Mode: throttle.Cooldown, Window: 3 * time.Second}, 429, 3 * time.Second},
		{"exclusive", throttle.Policy{Name: "job", Mode: throttle.Exclusive, LeaseTTL: 20 * time.Second}, 409, 20 * time.Second},
		{"reject status", throttle.Policy{Name: "submit", RejectStatus: http.StatusTooEarly}, 425, throttle.DefaultWindow},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := newLimiter(t, c.p)
			ctx, first := mustAdmit(t, l, "u1")
			defer first.finish(ctx, http.StatusOK, false)

			parent := context.Background()
			got, tk, rej := New(l).begin1(parent, "u1")
			if rej == nil {
				tk.finish(got, http.StatusOK, false)
				t.Fatal("second request admitted")
			}
			if rej.Status != c.status || rej.Reason != ReasonContended ||
				rej.Policy.Name != c.p.Name || rej.Policy.Mode != c.p.Mode || rej.Policy.TTL() != c.window {
				t.Fatalf("rejection %+v, want status %d, contended, policy %q, mode %v, window %v",
					*rej, c.status, c.p.Name, c.p.Mode, c.window)
			}
			if rej.RetryAfter <= 0 || rej.RetryAfter > c.window {
				t.Fatalf("RetryAfter %v, want within (0, %v]", rej.RetryAfter, c.window)
			}
			if !errors.Is(rej.Err, throttle.ErrContended) {
				t.Fatalf("Err %v does not match ErrContended", rej.Err)
			}
			if got != parent {
				t.Fatal("a turned-away request got a new context")
			}
			rec := httptest.NewRecorder()
			Write(rec, rej)
			if n, err := strconv.Atoi(rec.Header().Get("Retry-After")); rec.Code != c.status || err != nil ||
				n < 1 || time.Duration(n)*time.Second > c.window {
				t.Fatalf("answer %d with Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
			}
		})
	}
}

func TestBeginStoreFailsOpen(t *testing.T) {
	for _, p := range []throttle.Policy{
		{Name: "submit", Logger: quiet}, // open by default
		{Name: "submit", Fence: true, Logger: quiet},
		{Name: "job", Mode: throttle.Exclusive, WhenStoreFails: throttle.FailOpen, Logger: quiet},
	} {
		t.Run(fmt.Sprintf("%v fence=%v", p.Mode, p.Fence), func(t *testing.T) {
			st := &brokenStore{}
			l, err := throttle.New(st, p)
			if err != nil {
				t.Fatal(err)
			}
			type ctxKey struct{}
			parent := context.WithValue(context.Background(), ctxKey{}, 1)
			ctx, tk, rej := New(l).begin1(parent, "u1")
			if rej != nil {
				t.Fatalf("turned away under a fail-open policy: %+v", *rej)
			}
			if ctx != parent || throttle.LeaseFrom(ctx) != nil {
				t.Fatal("an unguarded request got a context with a lease")
			}
			ran := 0
			tk.run(ctx, func() int { ran++; return http.StatusInternalServerError })
			if ran != 1 {
				t.Fatalf("handler ran %d times, want 1", ran)
			}
			// A failing handler, or a panicking one, has nothing to release.
			if p := runPanicking(ctx, tk, "boom"); p != "boom" {
				t.Fatalf("recovered %v, want the handler's panic", p)
			}
			tk.finish(ctx, http.StatusInternalServerError, true)
			if n := st.releases.Load(); n != 0 {
				t.Fatalf("zero ticket called Release %d times", n)
			}
			if s := l.Stats(); s.FailedOpen != 1 {
				t.Fatalf("Stats.FailedOpen = %d, want 1", s.FailedOpen)
			}
		})
	}
}

func TestBeginStoreFailsClosed(t *testing.T) {
	for _, p := range []throttle.Policy{
		{Name: "submit", WhenStoreFails: throttle.FailClosed, Logger: quiet},
		{Name: "job", Mode: throttle.Exclusive, Logger: quiet}, // closed by default
	} {
		t.Run(p.Mode.String(), func(t *testing.T) {
			l, err := throttle.New(&brokenStore{}, p)
			if err != nil {
				t.Fatal(err)
			}
			_, _, rej := New(l).begin1(context.Background(), "u1")
			if rej == nil {
				t.Fatal("admitted under a fail-closed policy")
			}
			if rej.Status != http.StatusServiceUnavailable || rej.Reason != ReasonStoreUnavailable ||
				rej.RetryAfter != time.Second || rej.Policy.Name != p.Name {
				t.Fatalf("rejection %+v, want 503, store-unavailable, 1s, policy %q", *rej, p.Name)
			}
			if !errors.Is(rej.Err, throttle.ErrStore) || !errors.Is(rej.Err, errBroken) {
				t.Fatalf("Err %v, want ErrStore wrapping the store's error", rej.Err)
			}
			rec := httptest.NewRecorder()
			Write(rec, rej)
			h := rec.Header()
			if rec.Code != 503 || h.Get("Retry-After") != "1" || h.Get("RateLimit") != "" {
				t.Fatalf("answer %d, headers %v", rec.Code, h)
			}
			for _, leak := range []string{"10.0.0.9", "6379", "refused", "store acquire", "u1"} {
				if strings.Contains(rec.Body.String(), leak) {
					t.Fatalf("body %q shows %q", rec.Body, leak)
				}
			}
		})
	}
}

func TestBeginCanceled(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	broken, err := throttle.New(&brokenStore{}, throttle.Policy{Name: "submit", WhenStoreFails: throttle.FailClosed, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		ctx  context.Context
		l    *throttle.Limiter
		err  error
	}{
		{"canceled", canceled, newLimiter(t, throttle.Policy{Name: "submit"}), context.Canceled},
		{"deadline", expired, newLimiter(t, throttle.Policy{Name: "submit"}), context.DeadlineExceeded},
		// The client is gone: that, not the store, is the reason.
		{"store down", canceled, broken, context.Canceled},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, rej := New(c.l).begin1(c.ctx, "u1")
			if rej == nil || rej.Reason != ReasonCanceled || !errors.Is(rej.Err, c.err) {
				t.Fatalf("rejection %+v, want canceled with %v", rej, c.err)
			}
			if c.l != broken && held(t, c.l, "u1") {
				t.Fatal("a canceled request took the key")
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
	l := newLimiter(t, throttle.Policy{Name: "submit", Mode: throttle.Cooldown, Window: 2 * time.Second})
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
			rej := New(l).badInput(c.err, ReasonBadKey)
			if rej.Status != c.status || rej.Reason != ReasonBadKey || rej.RetryAfter != 0 ||
				rej.Policy.Name != "submit" || rej.Policy.Mode != throttle.Cooldown || rej.Policy.Window != 2*time.Second ||
				!errors.Is(rej.Err, c.err) {
				t.Fatalf("rejection %+v, want status %d, bad-key, no retry, the policy and the error", *rej, c.status)
			}
			rec := httptest.NewRecorder()
			Write(rec, rej)
			if rec.Code != c.status || rec.Header().Get("Retry-After") != "" {
				t.Fatalf("answer %d with Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
			}
		})
	}
	if n := l.Stats().Acquired + l.Stats().Rejected; n != 0 {
		t.Fatalf("badInput used the store %d times", n)
	}
}

func TestDedupeStatus(t *testing.T) {
	for _, c := range []struct {
		status int
		kept   bool
	}{{200, true}, {201, true}, {304, true}, {404, false}, {500, false}, {503, false}} {
		t.Run(strconv.Itoa(c.status), func(t *testing.T) {
			l := newLimiter(t, throttle.Policy{Name: "submit"})
			ctx, tk := mustAdmit(t, l, "u1")
			tk.run(ctx, func() int { return c.status })
			if got := held(t, l, "u1"); got != c.kept {
				t.Fatalf("after %d the key is held: %v, want %v", c.status, got, c.kept)
			}
		})
	}
}

func TestDedupeFailedPolicy(t *testing.T) {
	l := newLimiter(t, throttle.Policy{Name: "submit", Failed: func(s int) bool { return s >= 500 }})
	ctx, tk := mustAdmit(t, l, "u1")
	tk.run(ctx, func() int { return http.StatusConflict })
	if !held(t, l, "u1") {
		t.Fatal("409 released the key although Policy.Failed says it succeeded")
	}
	ctx, tk = mustAdmit(t, l, "u2")
	tk.run(ctx, func() int { return http.StatusBadGateway })
	if held(t, l, "u2") {
		t.Fatal("502 kept the key although Policy.Failed says it failed")
	}
}

func TestCooldownKeepsAfterFailure(t *testing.T) {
	l := newLimiter(t, throttle.Policy{Name: "report", Mode: throttle.Cooldown})
	ctx, tk := mustAdmit(t, l, "u1")
	tk.run(ctx, func() int { return http.StatusInternalServerError })
	if !held(t, l, "u1") {
		t.Fatal("Cooldown released the key after a 500")
	}
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
			l := newLimiter(t, throttle.Policy{Name: "submit", Mode: c.mode})
			ctx, tk := mustAdmit(t, l, "u1")
			want := &panicValue{42}
			if got := runPanicking(ctx, tk, want); got != want {
				t.Fatalf("recovered %v, want the handler's own %v", got, want)
			}
			if got := held(t, l, "u1"); got == c.released {
				t.Fatalf("after a panic the key is held: %v", got)
			}
		})
	}
}

func TestRunGoexit(t *testing.T) {
	l := newLimiter(t, throttle.Policy{Name: "submit"})
	ctx, tk := mustAdmit(t, l, "u1")
	done := make(chan struct{})
	go func() {
		defer close(done)
		tk.run(ctx, func() int { runtime.Goexit(); return http.StatusOK })
	}()
	<-done
	if held(t, l, "u1") {
		t.Fatal("a handler that called runtime.Goexit kept the key")
	}
}

func TestExclusive(t *testing.T) {
	l := newLimiter(t, throttle.Policy{Name: "job", Mode: throttle.Exclusive, Fence: true})
	ctx, tk := mustAdmit(t, l, "c1")
	if ls := throttle.LeaseFrom(ctx); ls == nil || ls.Fence() <= 0 {
		t.Fatal("the handler's context carries no lease")
	}
	tk.run(ctx, func() int {
		if ctx.Err() != nil {
			t.Error("the handler's context ended before it ran")
		}
		if !held(t, l, "c1") {
			t.Error("the key is free while the handler runs")
		}
		return http.StatusCreated // a success does not keep it either
	})
	if ctx.Err() == nil {
		t.Fatal("the handler's context outlives the hold")
	}
	if held(t, l, "c1") {
		t.Fatal("Exclusive kept the key after Run")
	}
}

func TestBeginContext(t *testing.T) {
	parent := context.Background()
	for _, c := range []struct {
		name  string
		p     throttle.Policy
		lease bool
	}{
		{"plain", throttle.Policy{Name: "submit"}, false},
		{"fence", throttle.Policy{Name: "submit", Fence: true}, true},
		{"reentrant", throttle.Policy{Name: "submit", Reentrant: true}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, tk, rej := New(newLimiter(t, c.p)).begin1(parent, "u1")
			if rej != nil {
				t.Fatalf("turned away: %+v", *rej)
			}
			defer tk.finish(ctx, http.StatusOK, false)
			if got := throttle.LeaseFrom(ctx) != nil; got != c.lease {
				t.Fatalf("lease in the context: %v, want %v", got, c.lease)
			}
			// Adapters skip WithContext when nothing was added.
			if !c.lease && ctx != parent {
				t.Fatal("Begin returned a new context with nothing in it")
			}
		})
	}
}

func TestFinish(t *testing.T) {
	l := newLimiter(t, throttle.Policy{Name: "submit"})

	// The release runs although the request's context ended.
	parent, cancel := context.WithCancel(context.Background())
	ctx, tk, rej := New(l).begin1(parent, "u1")
	if rej != nil {
		t.Fatalf("turned away: %+v", *rej)
	}
	cancel()
	tk.finish(ctx, http.StatusInternalServerError, false)
	if held(t, l, "u1") {
		t.Fatal("Finish did not release with a canceled context")
	}

	// Finishing again never frees the key of the request admitted since.
	ctx, first := mustAdmit(t, l, "u2")
	first.finish(ctx, http.StatusInternalServerError, false)
	ctx2, second := mustAdmit(t, l, "u2")
	defer second.finish(ctx2, http.StatusOK, false)
	first.finish(ctx, http.StatusInternalServerError, true)
	if !held(t, l, "u2") {
		t.Fatal("a second Finish released another request's key")
	}
}

func TestReasonString(t *testing.T) {
	for r, want := range map[Reason]string{
		ReasonContended:        "contended",
		ReasonBadKey:           "bad-key",
		ReasonStoreUnavailable: "store-unavailable",
		ReasonCanceled:         "canceled",
		0:                      "unknown",
	} {
		if got := r.String(); got != want {
			t.Errorf("Reason(%d).String() = %q, want %q", r, got, want)
		}
	}
}
