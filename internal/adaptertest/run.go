package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// Run runs the adapter's behaviour suite on an in-memory store.
func Run(t *testing.T, a Adapter) {
	cases := []struct {
		name string
		fn   func(*testing.T, Adapter)
	}{
		{"DuplicateRejected", testDuplicate},
		{"DedupeFailureReleases", testDedupeFailure},
		{"DedupePanicReleases", testDedupePanic},
		{"DedupeNothingWrittenKeeps", testNothingWritten},
		{"WindowKeepsAfterFailure", testWindow},
		{"ExclusiveConflict", testExclusive},
		{"ExclusiveLeaseRefreshed", testLeaseRefreshed},
		{"FenceInContext", testFence},
		{"WaitInsteadOfConflict", testWait},
		{"ReentrantHandler", testReentrant},
		{"KeyError", testKeyError},
		{"BodyTooLarge", testBodyTooLarge},
		{"CustomReject", testCustomReject},
		{"RateLimitFieldsAdmitted", testAdmittedFields},
		{"Quota", testQuota},
		{"QuotaBurst", testQuotaBurst},
		{"QuotaKeyError", testQuotaKeyError},
		{"CostCharged", testCostCharged},
		{"CostAboveBurst", testCostAboveBurst},
		{"CostInvalid", testCostInvalid},
		{"CostIgnoredByOtherModes", testCostOtherModes},
		{"CostZero", testCostZero},
		{"DryRun", testDryRun},
		{"CountOnlyFailuresConcurrent", testOnlyFailuresConcurrent},
		{"CountOnlyFailuresSuccessesFree", testOnlyFailuresSuccesses},
		{"CountOnlyFailuresPanic", testOnlyFailuresPanic},
		{"Replay", testReplay},
		{"ReplayConcurrent", testReplayConcurrent},
		{"ReplayAfterFailure", testReplayAfterFailure},
		{"ReplayInFlight", testReplayInFlight},
		{"ReplayKeyReused", testReplayKeyReused},
		{"ReplayFailureReleases", testReplayFailureReleases},
		{"ReplayNoBody", testReplayNoBody},
		{"ReplayUnrecordable", testReplayUnrecordable},
		{"ReplayCustomReject", testReplayCustomReject},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, a) })
	}
}

// StoredKey returns the key l stores for the identity id.
func StoredKey(l *throttle.Limiter, id string) string {
	p := l.Policy()
	return store.Key(p.Prefix, p.Name, id)
}

// tokenLog is a store that remembers the first token it was asked to
// acquire with, so that a test can check that no answer shows it.
type tokenLog struct {
	throttle.Store
	mu  sync.Mutex
	tok string
}

func (s *tokenLog) Acquire(ctx context.Context, req store.Request) (store.Grant, error) {
	s.mu.Lock()
	if s.tok == "" {
		s.tok = req.Token
	}
	s.mu.Unlock()
	return s.Store.Acquire(ctx, req)
}

func (s *tokenLog) first() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tok
}

// NewLimiter returns a limiter for p on a fresh memory store.
func NewLimiter(t testing.TB, p throttle.Policy) *throttle.Limiter {
	t.Helper()
	l, err := throttle.New(memstore.New(), p)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// counter is a handler that counts its calls and answers with the status
// the call number picks (201 when statuses runs out).
type counter struct {
	calls    atomic.Int32
	statuses []int
}

func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := int(c.calls.Add(1))
	status := http.StatusCreated
	if n <= len(c.statuses) {
		status = c.statuses[n-1]
	}
	OK(w, status)
}

func testDuplicate(t *testing.T, a Adapter) {
	st := &tokenLog{Store: memstore.New()}
	l, err := throttle.New(st, throttle.Policy{Name: "submit", Window: 5 * time.Second, Fence: true})
	if err != nil {
		t.Fatal(err)
	}
	var sawLease atomic.Bool
	var calls atomic.Int32
	h := a.Wrap(l, UserKey(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		sawLease.Store(throttle.LeaseFrom(r.Context()) != nil)
		OK(w, http.StatusCreated)
	}))
	const user = "user-7f3a9c"
	Status(t, Serve(h, Submit(user)), http.StatusCreated)
	tok := st.first()
	if !sawLease.Load() || len(tok) < 16 {
		t.Fatalf("handler saw no lease in its context (token %q)", tok)
	}
	rec := Serve(h, Submit(user))
	p := CheckProblem(t, rec, http.StatusTooManyRequests, QuotaExceeded, user, tok[:16], StoredKey(l, user))
	checkViolated(t, p, "submit")
	if n := RetryAfter(t, rec.Header()); n > 5 {
		t.Fatalf("Retry-After %d exceeds the 5s window", n)
	}
	CheckRateLimit(t, rec.Header(), "submit", `"submit";q=1;w=5`, 5)
	CheckRejectedLimit(t, rec.Header(), "submit", 0)
	if n := calls.Load(); n != 1 {
		t.Fatalf("handler ran %d times, want 1", n)
	}
	// Another user has a key of their own.
	Status(t, Serve(h, Submit("user-other")), http.StatusCreated)
}

func testDedupeFailure(t *testing.T, a Adapter) {
	l := NewLimiter(t, throttle.Policy{Name: "submit"})
	c := &counter{statuses: []int{http.StatusInternalServerError, http.StatusCreated}}
	h := a.Wrap(l, UserKey(), c)
	Status(t, Serve(h, Submit("u1")), http.StatusInternalServerError)
	// The failure released the key: the retry is admitted ...
	Status(t, Serve(h, Submit("u1")), http.StatusCreated)
	// ... and its success is kept for the window.
	CheckProblem(t, Serve(h, Submit("u1")), http.StatusTooManyRequests, QuotaExceeded)
	if n := c.calls.Load(); n != 2 {
		t.Fatalf("handler ran %d times, want 2", n)
	}
}

type panicValue struct{ n int }

func testDedupePanic(t *testing.T, a Adapter) {
	l := NewLimiter(t, throttle.Policy{Name: "submit"})
	want := &panicValue{42}
	var calls atomic.Int32
	h := a.Wrap(l, UserKey(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			panic(want)
		}
		OK(w, http.StatusCreated)
	}))
	if p := ServePanic(h, Submit("u1")); p != want {
		t.Fatalf("panic value %v, want the handler's %v", p, want)
	}
	Status(t, Serve(h, Submit("u1")), http.StatusCreated)
	Status(t, Serve(h, Submit("u1")), http.StatusTooManyRequests)
}

func testNothingWritten(t *testing.T, a Adapter) {
	l := NewLimiter(t, throttle.Policy{Name: "submit"})
	h := a.Wrap(l, UserKey(), http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	Status(t, Serve(h, Submit("u1")), http.StatusOK)
	Status(t, Serve(h, Submit("u1")), http.StatusTooManyRequests)
}

func testWindow(t *testing.T, a Adapter) {
	l := NewLimiter(t, throttle.Policy{Name: "report", Mode: throttle.Cooldown, Window: 3 * time.Second})
	c := &counter{statuses: []int{http.StatusInternalServerError, http.StatusInternalServerError}}
	h := a.Wrap(l, UserKey(), c)
	Status(t, Serve(h, Submit("u1")), http.StatusInternalServerError)
	rec := Serve(h, Submit("u1"))
	CheckProblem(t, rec, http.StatusTooManyRequests, QuotaExceeded)
	CheckRateLimit(t, rec.Header(), "report", `"report";q=1;w=3`, 3)
	CheckRejectedLimit(t, rec.Header(), "report", 0)
	if n := c.calls.Load(); n != 1 {
		t.Fatalf("handler ran %d times, want 1", n)
	}
}

// blocker is a handler whose first call signals entered and waits for
// release; later calls answer at once.
type blocker struct {
	calls   atomic.Int32
	entered chan struct{}
	release chan struct{}
}

func newBlocker() *blocker {
	return &blocker{entered: make(chan struct{}), release: make(chan struct{})}
}

func (b *blocker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if b.calls.Add(1) == 1 {
		close(b.entered)
		<-b.release
	}
	OK(w, http.StatusOK)
}

// background serves r in a goroutine; the returned function waits for the
// answer.
func background(h http.Handler, r *http.Request) func() int {
	var wg sync.WaitGroup
	var code int
	wg.Add(1)
	go func() {
		defer wg.Done()
		code = Serve(h, r).Code
	}()
	return func() int { wg.Wait(); return code }
}

func testExclusive(t *testing.T, a Adapter) {
	l := NewLimiter(t, throttle.Policy{Name: "job", Mode: throttle.Exclusive})
	b := newBlocker()
	h := a.Wrap(l, UserKey(), b)
	first := background(h, Submit("c1"))
	<-b.entered
	rec := Serve(h, Submit("c1"))
	CheckProblem(t, rec, http.StatusConflict, "about:blank", "c1")
	// Exclusive limits concurrency: no window, and t is when the holder's
	// lease would expire.
	CheckPolicy(t, rec.Header(), ConcurrencyPolicy("job"))
	CheckLimit(t, rec.Header(), "job", 0, 1, 30)
	CheckRejectedLimit(t, rec.Header(), "job", 0)
	close(b.release)
	if code := first(); code != http.StatusOK {
		t.Fatalf("first request: status %d", code)
	}
	// Released when the handler returned.
	Status(t, Serve(h, Submit("c1")), http.StatusOK)
}

func testLeaseRefreshed(t *testing.T, a Adapter) {
	const lease = 300 * time.Millisecond
	l := NewLimiter(t, throttle.Policy{Name: "job", Mode: throttle.Exclusive, LeaseTTL: lease})
	entered := make(chan struct{})
	var calls atomic.Int32
	var problem atomic.Value
	h := a.Wrap(l, UserKey(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) > 1 {
			OK(w, http.StatusOK)
			return
		}
		ctx := r.Context()
		if throttle.LeaseFrom(ctx) == nil {
			problem.Store("no lease in the request context")
		}
		close(entered)
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			problem.Store("context ended while the handler ran: " + context.Cause(ctx).Error())
		}
		OK(w, http.StatusOK)
	}))
	first := background(h, Submit("c1"))
	<-entered
	time.Sleep(2 * lease) // past the lease: only refreshes keep the key
	Status(t, Serve(h, Submit("c1")), http.StatusConflict)
	if code := first(); code != http.StatusOK {
		t.Fatalf("slow request: status %d", code)
	}
	if p := problem.Load(); p != nil {
		t.Fatal(p)
	}
	if lost := l.Stats().Lost; lost != 0 {
		t.Fatalf("Stats.Lost = %d", lost)
	}
	Status(t, Serve(h, Submit("c1")), http.StatusOK)
}

func testFence(t *testing.T, a Adapter) {
	l := NewLimiter(t, throttle.Policy{Name: "job", Mode: throttle.Exclusive, Fence: true})
	h := a.Wrap(l, UserKey(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ls := throttle.LeaseFrom(r.Context())
		if ls == nil {
			http.Error(w, "no lease", http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, strconv.FormatInt(ls.Fence(), 10))
	}))
	var last int64
	for i := 0; i < 3; i++ {
		rec := Serve(h, Submit("c1"))
		Status(t, rec, http.StatusOK)
		f, err := strconv.ParseInt(rec.Body.String(), 10, 64)
		if err != nil || f <= last {
			t.Fatalf("fence %q after %d, want a strictly increasing positive number", rec.Body.String(), last)
		}
		last = f
	}
}

func testWait(t *testing.T, a Adapter) {
	l := NewLimiter(t, throttle.Policy{Name: "job", Mode: throttle.Exclusive, Wait: 10 * time.Second})
	b := newBlocker()
	h := a.Wrap(l, UserKey(), b)
	first := background(h, Submit("c1"))
	<-b.entered
	second := background(h, Submit("c1"))
	// Release the first only once the second has found the key held.
	deadline := time.Now().Add(5 * time.Second)
	for l.Stats().Rejected == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the second request never tried the held key")
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(b.release)
	if c1, c2 := first(), second(); c1 != http.StatusOK || c2 != http.StatusOK {
		t.Fatalf("statuses %d and %d, want both 200 (the second waited)", c1, c2)
	}
}

// testReentrant checks that a handler which calls code taking the same key
// with the request context re-enters it instead of blocking itself, and that
// the key is free again once the request is over.
func testReentrant(t *testing.T, a Adapter) {
	l := NewLimiter(t, throttle.Policy{Name: "job", Mode: throttle.Exclusive, Reentrant: true})
	h := a.Wrap(l, UserKey(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(UserHeader)
		answer := ""
		err := l.Do(r.Context(), id, func(ctx context.Context) error {
			// Re-entered: the key must still be held against any other
			// owner.
			_, err := l.Acquire(context.Background(), id)
			answer = fmt.Sprintf("reentered, other owner: %v", errors.Is(err, throttle.ErrContended))
			return nil
		})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, answer)
	}))
	for i := 0; i < 2; i++ {
		rec := Serve(h, Submit("c1"))
		Status(t, rec, http.StatusOK)
		if want := "reentered, other owner: true"; rec.Body.String() != want {
			t.Fatalf("request %d: %q, want %q", i+1, rec.Body.String(), want)
		}
	}
}

func testKeyError(t *testing.T, a Adapter) {
	l := NewLimiter(t, throttle.Policy{Name: "submit"})
	c := &counter{}
	h := a.Wrap(l, UserKey(), c)
	rec := Serve(h, Submit(""))
	// The detail names what is missing, and the type links to what it
	// means (the idempotency-key draft asks for a documentation link).
	p := CheckProblem(t, rec, http.StatusBadRequest, BadKeyType)
	if want := `header "` + UserHeader + `": missing`; !strings.Contains(p.Detail, want) {
		t.Fatalf("detail %q does not name %s", p.Detail, want)
	}
	// The policy is known; the client's quota is not.
	if v := rec.Header().Get("Retry-After"); v != "" {
		t.Fatalf("Retry-After %q on a bad-key answer", v)
	}
	CheckPolicy(t, rec.Header(), WindowPolicy("submit", 1, 5))
	NoLimit(t, rec.Header())
	if n := c.calls.Load(); n != 0 || l.Stats().Acquired != 0 {
		t.Fatalf("handler ran %d times, %d acquisitions; want none", n, l.Stats().Acquired)
	}
}

func testBodyTooLarge(t *testing.T, a Adapter) {
	l := NewLimiter(t, throttle.Policy{Name: "submit"})
	key := keyfuncs.Join(UserKey(), keyfuncs.BodyHash(16))
	var got atomic.Value
	h := a.Wrap(l, key, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.Store(string(b))
		OK(w, http.StatusCreated)
	}))
	long := strings.Repeat("x", 64)
	CheckProblem(t, Serve(h, SubmitBody("u1", long)), http.StatusRequestEntityTooLarge, BadKeyType, long)
	Status(t, Serve(h, SubmitBody("u1", "small")), http.StatusCreated)
	if s, _ := got.Load().(string); s != "small" {
		t.Fatalf("handler read body %q, want it restored", s)
	}
	Status(t, Serve(h, SubmitBody("u1", "small")), http.StatusTooManyRequests)
	Status(t, Serve(h, SubmitBody("u1", "other")), http.StatusCreated)
}

func testCustomReject(t *testing.T, a Adapter) {
	l := NewLimiter(t, throttle.Policy{Name: "submit"})
	h := a.WrapCustom(l, UserKey(), &counter{})
	Status(t, Serve(h, Submit("u1")), http.StatusCreated)
	for _, c := range []struct {
		user, reason string
	}{{"u1", "contended"}, {"", "bad-key"}} {
		rec := Serve(h, Submit(c.user))
		Status(t, rec, CustomStatus)
		if got := rec.Header().Get(CustomHeader); got != c.reason {
			t.Fatalf("%s = %q, want %q", CustomHeader, got, c.reason)
		}
	}
}
