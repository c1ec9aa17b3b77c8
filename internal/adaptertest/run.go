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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
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
		{"RatePerRequest", testRatePerRequest},
		{"StackedRates", testStackedRates},
		{"Holders", testHolders},
		{"Replay", testReplay},
		{"ReplayConcurrent", testReplayConcurrent},
		{"ReplayAfterFailure", testReplayAfterFailure},
		{"ReplayInFlight", testReplayInFlight},
		{"ReplayKeyReused", testReplayKeyReused},
		{"ReplayFailureReleases", testReplayFailureReleases},
		{"ReplayNoBody", testReplayNoBody},
		{"ReplayUnrecordable", testReplayUnrecordable},
		{"ReplayCustomReject", testReplayCustomReject},
		{"ReplayScopedByRoute", testReplayRoutes},
		{"ReplayFieldsOfNow", testReplayFieldsNow},
		{"Skip", testSkip},
		{"LegacyHeaders", testLegacyHeaders},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, a) })
	}
}

// StoredKey returns the key a limiter named name stores for the identity
// id under the default prefix, as the suite's limiters do.
func StoredKey(name, id string) string {
	return storekit.Key("throttle", name, id)
}

// QuotaKey returns the key a Quota named name stores for the identity id
// under its own rate and the default prefix.
func QuotaKey(name, id string) string {
	return string(storekit.AppendJobKey(nil, storekit.QuotaJob, "throttle", name, id, name))
}

// tokenLog is a store that remembers the first token it was asked to
// acquire with, so that a test can check that no answer shows it.
type tokenLog struct {
	store.Store
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

// NewLock returns a Lock configured by c on a fresh memory store.
func NewLock(t testing.TB, c throttle.LockConfig) *throttle.Lock {
	t.Helper()
	l, err := throttle.NewLock(memstore.New(), c)
	require.NoError(t, err)
	return l
}

// NewQuota returns a Quota configured by c on a fresh memory store.
func NewQuota(t testing.TB, c throttle.QuotaConfig) *throttle.Quota {
	t.Helper()
	q, err := throttle.NewQuota(memstore.New(), c)
	require.NoError(t, err)
	return q
}

// NewReplay returns a Replay configured by c on a fresh memory store.
func NewReplay(t testing.TB, c throttle.ReplayConfig) *throttle.Replay {
	t.Helper()
	r, err := throttle.NewReplay(memstore.New(), c)
	require.NoError(t, err)
	return r
}

// LockGuard returns the guard of a Lock configured by c on a fresh memory
// store, and the Lock.
func LockGuard(t testing.TB, c throttle.LockConfig, opts ...guard.Option) (*guard.Guard, *throttle.Lock) {
	t.Helper()
	l := NewLock(t, c)
	return guard.Lock(l, opts...), l
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
	l, err := throttle.NewLock(st, throttle.LockConfig{Name: "submit", TTL: 5 * time.Second, Fence: true})
	require.NoError(t, err)
	var sawLease atomic.Bool
	var calls atomic.Int32
	h := a.Wrap(guard.Lock(l), UserKey(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		sawLease.Store(throttle.LeaseFrom(r.Context()) != nil)
		OK(w, http.StatusCreated)
	}))
	const user = "user-7f3a9c"
	Status(t, Serve(h, Submit(user)), http.StatusCreated)
	tok := st.first()
	require.True(t, sawLease.Load(), "handler saw no lease in its context")
	require.GreaterOrEqual(t, len(tok), 16, "token %q", tok)
	rec := Serve(h, Submit(user))
	p := CheckProblem(t, rec, http.StatusTooManyRequests, QuotaExceeded, user, tok[:16], StoredKey("submit", user))
	checkViolated(t, p, "submit")
	assert.LessOrEqual(t, RetryAfter(t, rec.Header()), 5, "Retry-After exceeds the 5s TTL")
	CheckRateLimit(t, rec.Header(), "submit", `"submit";q=1;w=5`, 5)
	CheckRejectedLimit(t, rec.Header(), "submit", 0)
	require.Equal(t, int32(1), calls.Load(), "handler runs")
	// Another user has a key of their own.
	Status(t, Serve(h, Submit("user-other")), http.StatusCreated)
}

func testDedupeFailure(t *testing.T, a Adapter) {
	g, _ := LockGuard(t, throttle.LockConfig{Name: "submit"})
	c := &counter{statuses: []int{http.StatusInternalServerError, http.StatusCreated}}
	h := a.Wrap(g, UserKey(), c)
	Status(t, Serve(h, Submit("u1")), http.StatusInternalServerError)
	// The failure released the key: the retry is admitted ...
	Status(t, Serve(h, Submit("u1")), http.StatusCreated)
	// ... and its success is kept for the TTL.
	CheckProblem(t, Serve(h, Submit("u1")), http.StatusTooManyRequests, QuotaExceeded)
	require.Equal(t, int32(2), c.calls.Load(), "handler runs")
}

type panicValue struct{ n int }

func testDedupePanic(t *testing.T, a Adapter) {
	g, _ := LockGuard(t, throttle.LockConfig{Name: "submit"})
	want := &panicValue{42}
	var calls atomic.Int32
	h := a.Wrap(g, UserKey(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			panic(want)
		}
		OK(w, http.StatusCreated)
	}))
	require.Same(t, want, ServePanic(h, Submit("u1")), "panic value")
	Status(t, Serve(h, Submit("u1")), http.StatusCreated)
	Status(t, Serve(h, Submit("u1")), http.StatusTooManyRequests)
}

func testNothingWritten(t *testing.T, a Adapter) {
	g, _ := LockGuard(t, throttle.LockConfig{Name: "submit"})
	h := a.Wrap(g, UserKey(), http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	Status(t, Serve(h, Submit("u1")), http.StatusOK)
	Status(t, Serve(h, Submit("u1")), http.StatusTooManyRequests)
}

func testWindow(t *testing.T, a Adapter) {
	g, _ := LockGuard(t, throttle.LockConfig{Name: "report", Mode: throttle.Cooldown, TTL: 3 * time.Second})
	c := &counter{statuses: []int{http.StatusInternalServerError, http.StatusInternalServerError}}
	h := a.Wrap(g, UserKey(), c)
	Status(t, Serve(h, Submit("u1")), http.StatusInternalServerError)
	rec := Serve(h, Submit("u1"))
	CheckProblem(t, rec, http.StatusTooManyRequests, QuotaExceeded)
	CheckRateLimit(t, rec.Header(), "report", `"report";q=1;w=3`, 3)
	CheckRejectedLimit(t, rec.Header(), "report", 0)
	require.Equal(t, int32(1), c.calls.Load(), "handler runs")
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
	g, _ := LockGuard(t, throttle.LockConfig{Name: "job", Mode: throttle.Exclusive})
	b := newBlocker()
	h := a.Wrap(g, UserKey(), b)
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
	require.Equal(t, http.StatusOK, first(), "first request's status")
	// Released when the handler returned.
	Status(t, Serve(h, Submit("c1")), http.StatusOK)
}

func testLeaseRefreshed(t *testing.T, a Adapter) {
	const lease = 300 * time.Millisecond
	g, l := LockGuard(t, throttle.LockConfig{Name: "job", Mode: throttle.Exclusive, TTL: lease})
	entered := make(chan struct{})
	var calls atomic.Int32
	var problem atomic.Value
	h := a.Wrap(g, UserKey(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	require.Equal(t, http.StatusOK, first(), "slow request's status")
	require.Nil(t, problem.Load())
	require.Zero(t, l.Stats().Lost, "Stats.Lost")
	Status(t, Serve(h, Submit("c1")), http.StatusOK)
}

func testFence(t *testing.T, a Adapter) {
	g, _ := LockGuard(t, throttle.LockConfig{Name: "job", Mode: throttle.Exclusive, Fence: true})
	h := a.Wrap(g, UserKey(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ls := throttle.LeaseFrom(r.Context())
		if ls == nil {
			http.Error(w, "no lease", http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, strconv.FormatInt(ls.Fence(), 10))
	}))
	var last int64
	for range 3 {
		rec := Serve(h, Submit("c1"))
		Status(t, rec, http.StatusOK)
		f, err := strconv.ParseInt(rec.Body.String(), 10, 64)
		require.NoError(t, err, "fence %q", rec.Body.String())
		require.Greater(t, f, last, "fences increase strictly from 0")
		last = f
	}
}

func testWait(t *testing.T, a Adapter) {
	g, l := LockGuard(t, throttle.LockConfig{Name: "job", Mode: throttle.Exclusive, Wait: 10 * time.Second})
	b := newBlocker()
	h := a.Wrap(g, UserKey(), b)
	first := background(h, Submit("c1"))
	<-b.entered
	second := background(h, Submit("c1"))
	// Release the first only once the second has found the key held.
	require.Eventually(t, func() bool { return l.Stats().Rejected > 0 }, 5*time.Second, 5*time.Millisecond,
		"the second request never tried the held key")
	close(b.release)
	assert.Equal(t, http.StatusOK, first(), "first request")
	assert.Equal(t, http.StatusOK, second(), "second request (it waited)")
}

// testReentrant checks that a handler which calls code taking the same key
// with the request context re-enters it instead of blocking itself, and that
// the key is free again once the request is over.
func testReentrant(t *testing.T, a Adapter) {
	g, l := LockGuard(t, throttle.LockConfig{Name: "job", Mode: throttle.Exclusive, Reentrant: true})
	h := a.Wrap(g, UserKey(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	for i := range 2 {
		rec := Serve(h, Submit("c1"))
		Status(t, rec, http.StatusOK)
		require.Equal(t, "reentered, other owner: true", rec.Body.String(), "request %d", i+1)
	}
}

func testKeyError(t *testing.T, a Adapter) {
	g, l := LockGuard(t, throttle.LockConfig{Name: "submit"})
	c := &counter{}
	h := a.Wrap(g, UserKey(), c)
	rec := Serve(h, Submit(""))
	// The detail names what is missing, and the type links to what it
	// means (the idempotency-key draft asks for a documentation link).
	p := CheckProblem(t, rec, http.StatusBadRequest, BadKeyType)
	require.Contains(t, p.Detail, `header "`+UserHeader+`": missing`)
	// The policy is known; the client's quota is not.
	noRetryAfter(t, rec.Header())
	CheckPolicy(t, rec.Header(), WindowPolicy("submit", 1, 5))
	NoLimit(t, rec.Header())
	require.Zero(t, c.calls.Load(), "handler runs")
	require.Zero(t, l.Stats().Acquired, "acquisitions")
}

func testBodyTooLarge(t *testing.T, a Adapter) {
	g, _ := LockGuard(t, throttle.LockConfig{Name: "submit"})
	key := keyfuncs.Join(UserKey(), keyfuncs.BodyHash(16))
	var got atomic.Value
	h := a.Wrap(g, key, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.Store(string(b))
		OK(w, http.StatusCreated)
	}))
	long := strings.Repeat("x", 64)
	CheckProblem(t, Serve(h, SubmitBody("u1", long)), http.StatusRequestEntityTooLarge, BadKeyType, long)
	Status(t, Serve(h, SubmitBody("u1", "small")), http.StatusCreated)
	require.Equal(t, "small", got.Load(), "the body the handler read (restored)")
	Status(t, Serve(h, SubmitBody("u1", "small")), http.StatusTooManyRequests)
	Status(t, Serve(h, SubmitBody("u1", "other")), http.StatusCreated)
}

// testCustomReject: the adapter's own rejection handler answers every
// rejection, with the standard fields set before it ran, and the values it
// reads from the rejection are those the fields give (issue 37: RetryAfter
// gave 4 s where Retry-After said 5).
func testCustomReject(t *testing.T, a Adapter) {
	g, _ := LockGuard(t, throttle.LockConfig{Name: "submit"})
	h := a.WrapCustom(g, UserKey(), &counter{})
	Status(t, Serve(h, Submit("u1")), http.StatusCreated)
	for _, c := range []struct {
		user, reason string
	}{{"u1", "contended"}, {"", "bad-key"}} {
		rec := Serve(h, Submit(c.user))
		Status(t, rec, CustomStatus)
		require.Equal(t, c.reason, rec.Header().Get(CustomHeader), CustomHeader)
		// The handler's answer carries the standard fields, set before it ran.
		CheckPolicy(t, rec.Header(), WindowPolicy("submit", 1, 5))
		if c.reason == "contended" {
			CheckRateLimit(t, rec.Header(), "submit", `"submit";q=1;w=5`, 5)
		} else {
			NoLimit(t, rec.Header())
		}
		checkCustomValues(t, rec.Header(), "submit")
	}
	t.Run("Quota", func(t *testing.T) {
		q := NewQuota(t, throttle.QuotaConfig{Name: "search"})
		h := a.WrapCustom(guard.Quota(q, throttle.Rate{Limit: 2, Window: 7 * time.Second}), UserKey(), &counter{})
		for range 2 {
			Status(t, Serve(h, Submit("u1")), http.StatusCreated)
		}
		rec := Serve(h, Submit("u1"))
		Status(t, rec, CustomStatus)
		checkCustomValues(t, rec.Header(), "search")
	})
	t.Run("Exclusive", func(t *testing.T) {
		g, _ := LockGuard(t, throttle.LockConfig{Name: "job", Mode: throttle.Exclusive, TTL: 3 * time.Second})
		b := newBlocker()
		h := a.WrapCustom(g, UserKey(), b)
		first := background(h, Submit("c1"))
		<-b.entered
		rec := Serve(h, Submit("c1"))
		close(b.release)
		require.Equal(t, http.StatusOK, first())
		Status(t, rec, CustomStatus)
		checkCustomValues(t, rec.Header(), "job")
	})
}

// checkCustomValues fails the test unless the values the custom handler
// read from the rejection (CustomAnswer) are those of the header fields
// the middleware set: RetryAfter is Retry-After, and the first policy's
// Remaining and Reset are RateLimit's r and t.
func checkCustomValues(t testing.TB, h http.Header, name string) {
	t.Helper()
	want := "0"
	if h.Get("Retry-After") != "" {
		want = strconv.Itoa(RetryAfter(t, h))
	}
	require.Equal(t, want, h.Get(CustomRetry), "RetryAfter, against Retry-After")
	if len(h.Values(RateLimitHeader)) == 0 {
		require.Empty(t, h.Get(CustomRemaining), "Remaining without RateLimit")
		return
	}
	f := LimitOf(t, h, name)
	require.Equal(t, strconv.FormatInt(f.R, 10), h.Get(CustomRemaining), "Remaining, against RateLimit's r")
	require.Equal(t, strconv.FormatInt(f.T, 10), h.Get(CustomReset), "Reset, against RateLimit's t")
}
