package adaptertest

import (
	"cmp"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/guard"
)

// CostHeader carries a request's cost in the suite's cost tests; the
// value "too-large" makes the cost function fail with a 413 error.
const CostHeader = "X-Cost"

// StatusHeader tells statusHandler which status to answer with; the value
// "panic" makes it panic.
const StatusHeader = "X-Status"

// CostFromHeader is the cost function of the suite's cost tests: the
// integer in CostHeader, 1 when it is absent, an error when it is not an
// integer.
func CostFromHeader(r *http.Request) (int, error) {
	v := r.Header.Get(CostHeader)
	if v == "" {
		return 1, nil
	}
	return strconv.Atoi(v)
}

// WithHeader sets the header name of r to v and returns r.
func WithHeader(r *http.Request, name, v string) *http.Request {
	r.Header.Set(name, v)
	return r
}

// costly returns a Submit request from user with cost in CostHeader.
func costly(user string, cost int) *http.Request {
	return WithHeader(Submit(user), CostHeader, strconv.Itoa(cost))
}

// statusHandler counts its calls and answers with the status StatusHeader
// names (200 when it names none), or panics when it says "panic".
type statusHandler struct{ calls atomic.Int32 }

// handlerPanic is what statusHandler panics with.
var handlerPanic = &panicValue{401}

func (s *statusHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.calls.Add(1)
	v := r.Header.Get(StatusHeader)
	if v == "panic" {
		panic(handlerPanic)
	}
	status := http.StatusOK
	if v != "" {
		status, _ = strconv.Atoi(v)
	}
	OK(w, status)
}

// checkViolated fails the test unless the problem names exactly the policy
// name as violated.
func checkViolated(t testing.TB, p Problem, name string) {
	t.Helper()
	require.Equal(t, []string{name}, p.ViolatedPolicies, "violated-policies")
}

// noRetryAfter fails the test when h has a Retry-After.
func noRetryAfter(t testing.TB, h http.Header) {
	t.Helper()
	require.Empty(t, h.Values("Retry-After"), "Retry-After")
}

// untouched fails the test when l decided anything in its store.
func untouched(t testing.TB, l interface{ Stats() throttle.Stats }) {
	t.Helper()
	s := l.Stats()
	require.Zero(t, s.Acquired, "admitted by the store")
	require.Zero(t, s.Rejected, "rejected by the store")
}

// testAdmittedFields checks the RateLimit fields of an admitted request
// holding its key: nothing more is available to it (r=0), for the TTL in
// Dedupe and Cooldown, for as long as the work runs (no t) in Exclusive.
func testAdmittedFields(t *testing.T, a Adapter) {
	for _, c := range []struct {
		name   string
		c      throttle.LockConfig
		policy Field
		t      int64 // 0: no t
	}{
		{"dedupe", throttle.LockConfig{Name: "submit"}, WindowPolicy("submit", 1, 5), 5},
		{"cooldown", throttle.LockConfig{Name: "report", Mode: throttle.Cooldown, TTL: 3 * time.Second},
			WindowPolicy("report", 1, 3), 3},
		{"exclusive", throttle.LockConfig{Name: "job", Mode: throttle.Exclusive}, ConcurrencyPolicy("job"), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, _ := LockGuard(t, c.c)
			rec := Serve(a.Wrap(g, UserKey(), &counter{}), Submit("u1"))
			Status(t, rec, http.StatusCreated)
			CheckPolicy(t, rec.Header(), c.policy)
			if c.t > 0 {
				CheckLimit(t, rec.Header(), c.c.Name, 0, c.t, c.t)
			} else {
				CheckLimitNoT(t, rec.Header(), c.c.Name, 0)
			}
			noRetryAfter(t, rec.Header())
		})
	}
}

// searchRate is the rate of the suite's Quota "search": 3 requests a
// minute, one refilled every 20 s.
var searchRate = throttle.Rate{Limit: 3, Window: time.Minute}

// newSearch returns the suite's Quota "search" on a fresh memory store.
func newSearch(t testing.TB) *throttle.Quota {
	return NewQuota(t, throttle.QuotaConfig{Name: "search"})
}

func testQuota(t *testing.T, a Adapter) {
	q := newSearch(t)
	c := &statusHandler{}
	h := a.Wrap(guard.Quota(q, searchRate), UserKey(), c)
	for _, r := range []int64{2, 1, 0} {
		rec := Serve(h, Submit("u1"))
		Status(t, rec, http.StatusOK)
		CheckPolicy(t, rec.Header(), WindowPolicy("search", 3, 60))
		// t: until one more request refills, at most the 20 s interval.
		CheckLimit(t, rec.Header(), "search", r, 1, 20)
		noRetryAfter(t, rec.Header())
	}
	rec := Serve(h, Submit("u1"))
	p := CheckProblem(t, rec, http.StatusTooManyRequests, QuotaExceeded, "u1", QuotaKey("search", "u1"))
	checkViolated(t, p, "search")
	CheckPolicy(t, rec.Header(), WindowPolicy("search", 3, 60))
	ra := CheckRejectedLimit(t, rec.Header(), "search", 0)
	require.LessOrEqual(t, ra, 20, "Retry-After: one request refills in 20 s")
	require.Equal(t, int32(3), c.calls.Load(), "handler runs")
	// Another user has a quota of their own.
	rec = Serve(h, Submit("u2"))
	Status(t, rec, http.StatusOK)
	CheckLimit(t, rec.Header(), "search", 2, 1, 20)
}

// testQuotaBurst checks that a Burst other than Limit is admitted and said
// in throttle-burst, and that one equal to Limit is not said.
func testQuotaBurst(t *testing.T, a Adapter) {
	for _, burst := range []int{5, 1, 3} {
		t.Run("burst "+strconv.Itoa(burst), func(t *testing.T) {
			rate := searchRate
			rate.Burst = burst
			c := &statusHandler{}
			h := a.Wrap(guard.Quota(newSearch(t), rate), UserKey(), c)
			want := WindowPolicy("search", 3, 60)
			if burst != rate.Limit {
				want.Burst = int64(burst)
			}
			for r := burst - 1; r >= 0; r-- {
				rec := Serve(h, Submit("u1"))
				Status(t, rec, http.StatusOK)
				CheckPolicy(t, rec.Header(), want)
				CheckLimit(t, rec.Header(), "search", int64(r), 1, 20)
			}
			rec := Serve(h, Submit("u1"))
			CheckProblem(t, rec, http.StatusTooManyRequests, QuotaExceeded)
			CheckPolicy(t, rec.Header(), want)
			CheckRejectedLimit(t, rec.Header(), "search", 0)
			require.Equal(t, int32(burst), c.calls.Load(), "handler runs")
		})
	}
}

func testQuotaKeyError(t *testing.T, a Adapter) {
	q := newSearch(t)
	c := &statusHandler{}
	rec := Serve(a.Wrap(guard.Quota(q, searchRate), UserKey(), c), Submit(""))
	CheckProblem(t, rec, http.StatusBadRequest, BadKeyType)
	CheckPolicy(t, rec.Header(), WindowPolicy("search", 3, 60))
	NoLimit(t, rec.Header())
	noRetryAfter(t, rec.Header())
	require.Zero(t, c.calls.Load(), "handler runs")
	untouched(t, q)
}

// batchRate is the rate of the suite's Quota "batch" for costs: 10 a
// minute, one refilled every 6 s.
var batchRate = throttle.Rate{Limit: 10, Window: time.Minute}

// newBatch returns the suite's Quota "batch" on a fresh memory store.
func newBatch(t testing.TB) *throttle.Quota {
	return NewQuota(t, throttle.QuotaConfig{Name: "batch"})
}

func testCostCharged(t *testing.T, a Adapter) {
	c := &statusHandler{}
	h := a.Wrap(guard.Quota(newBatch(t), batchRate, a.cost(CostFromHeader)), UserKey(), c)

	rec := Serve(h, costly("u1", 4))
	Status(t, rec, http.StatusOK)
	CheckPolicy(t, rec.Header(), WindowPolicy("batch", 10, 60))
	CheckLimit(t, rec.Header(), "batch", 6, 1, 6)

	// A cost above what remains is turned away and charges nothing; the
	// RateLimit field says what remains, until when, and Retry-After when
	// the whole cost fits, later.
	rec = Serve(h, costly("u1", 8))
	checkViolated(t, CheckProblem(t, rec, http.StatusTooManyRequests, QuotaExceeded), "batch")
	ra := RetryAfter(t, rec.Header())
	f := CheckLimit(t, rec.Header(), "batch", 6, 1, 6)
	require.Greater(t, int64(ra), f.T, "Retry-After for a cost of 8 with 6 left, against t")

	rec = Serve(h, costly("u1", 6))
	Status(t, rec, http.StatusOK)
	CheckLimit(t, rec.Header(), "batch", 0, 1, 6)

	rec = Serve(h, costly("u1", 1))
	checkViolated(t, CheckProblem(t, rec, http.StatusTooManyRequests, QuotaExceeded), "batch")
	ra = CheckRejectedLimit(t, rec.Header(), "batch", 0)
	require.LessOrEqual(t, ra, 6, "Retry-After: one request refills in 6 s")
	require.Equal(t, int32(2), c.calls.Load(), "handler runs")
	// Another user's quota is whole.
	rec = Serve(h, costly("u2", 10))
	Status(t, rec, http.StatusOK)
	CheckLimit(t, rec.Header(), "batch", 0, 1, 6)
}

// testCostAboveBurst checks that a cost no wait would let through is 413,
// charges nothing and never reaches the handler, and that the bound is
// Burst, not Limit.
func testCostAboveBurst(t *testing.T, a Adapter) {
	for _, burst := range []int{10, 12} {
		t.Run("burst "+strconv.Itoa(burst), func(t *testing.T) {
			rate := batchRate
			rate.Burst = burst
			q := newBatch(t)
			c := &statusHandler{}
			h := a.Wrap(guard.Quota(q, rate, a.cost(CostFromHeader)), UserKey(), c)
			want := WindowPolicy("batch", 10, 60)
			if burst != rate.Limit {
				want.Burst = int64(burst)
			}

			rec := Serve(h, costly("u1", burst+1))
			CheckProblem(t, rec, http.StatusRequestEntityTooLarge, "about:blank", "u1", QuotaKey("batch", "u1"))
			CheckPolicy(t, rec.Header(), want)
			NoLimit(t, rec.Header())
			noRetryAfter(t, rec.Header())
			require.Zero(t, c.calls.Load(), "handler runs")
			untouched(t, q)

			// The quota is whole: the most it allows fits at once.
			rec = Serve(h, costly("u1", burst))
			Status(t, rec, http.StatusOK)
			CheckLimit(t, rec.Header(), "batch", 0, 1, 6)
		})
	}
}

// testCostInvalid checks that a cost that cannot be worked out (the cost
// function fails, or says a negative cost) is the client's fault, answered
// like a bad key, before the store is asked.
func testCostInvalid(t *testing.T, a Adapter) {
	for _, c := range []struct {
		cost   string
		status int
	}{
		{"many", http.StatusBadRequest}, // the cost function fails
		{"-1", http.StatusBadRequest},   // a negative cost
		{"-11", http.StatusBadRequest},  // a negative cost beyond Burst
		{"too-large", http.StatusRequestEntityTooLarge},
	} {
		t.Run(c.cost, func(t *testing.T) {
			q := newBatch(t)
			s := &statusHandler{}
			cost := func(r *http.Request) (int, error) {
				if r.Header.Get(CostHeader) == "too-large" {
					return 0, tooLarge
				}
				return CostFromHeader(r)
			}
			h := a.Wrap(guard.Quota(q, batchRate, a.cost(cost)), UserKey(), s)
			rec := Serve(h, WithHeader(Submit("u1"), CostHeader, c.cost))
			CheckProblem(t, rec, c.status, "about:blank", "many", "strconv", "syntax", "cost function", "u1")
			CheckPolicy(t, rec.Header(), WindowPolicy("batch", 10, 60))
			NoLimit(t, rec.Header())
			noRetryAfter(t, rec.Header())
			require.Zero(t, s.calls.Load(), "handler runs")
			untouched(t, q)
		})
	}
}

// tooLarge is a cost function's error that asks for 413, as a body too long
// to count would.
var tooLarge = httpStatusError{http.StatusRequestEntityTooLarge, "cost function: body too long to count"}

type httpStatusError struct {
	status int
	msg    string
}

func (e httpStatusError) Error() string   { return e.msg }
func (e httpStatusError) HTTPStatus() int { return e.status }

// testCostOtherModes checks that a guard other than a Quota's ignores the
// cost, as guard.WithCost says: a request holds its key or not.
func testCostOtherModes(t *testing.T, a Adapter) {
	l := NewLock(t, throttle.LockConfig{Name: "submit"})
	c := &statusHandler{}
	h := a.Wrap(guard.Lock(l, a.cost(CostFromHeader)), UserKey(), c)
	for _, user := range []string{"u1", "u2"} {
		cost := 11
		if user == "u2" {
			cost = -1
		}
		rec := Serve(h, costly(user, cost))
		Status(t, rec, http.StatusOK)
		CheckPolicy(t, rec.Header(), WindowPolicy("submit", 1, 5))
		CheckLimit(t, rec.Header(), "submit", 0, 5, 5)
	}
	CheckProblem(t, Serve(h, costly("u1", 1)), http.StatusTooManyRequests, QuotaExceeded)
	require.Equal(t, int32(2), c.calls.Load(), "handler runs")
	// The cost function is not even asked: one that would fail does not
	// turn requests away.
	broken := a.Wrap(guard.Lock(l, a.cost(func(*http.Request) (int, error) {
		t.Error("cost function called under a Dedupe lock")
		return 0, tooLarge
	})), UserKey(), c)
	Status(t, Serve(broken, Submit("u3")), http.StatusOK)
}

// testCostZero checks that a request of cost 0 is free but no way past a
// spent quota: it goes ahead while one of cost 1 would, and is refused
// with the quota's Retry-After once the quota is spent.
func testCostZero(t *testing.T, a Adapter) {
	s := &statusHandler{}
	h := a.Wrap(guard.Quota(newBatch(t), batchRate, a.cost(CostFromHeader)), UserKey(), s)
	rec := Serve(h, costly("u1", 0))
	Status(t, rec, http.StatusOK)
	CheckLimitNoT(t, rec.Header(), "batch", 10) // full: nothing to refill
	Status(t, Serve(h, costly("u1", 10)), http.StatusOK)
	rec = Serve(h, costly("u1", 0))
	CheckProblem(t, rec, http.StatusTooManyRequests, QuotaExceeded)
	CheckRejectedLimit(t, rec.Header(), "batch", 0)
	require.Equal(t, int32(2), s.calls.Load(), "handler runs")
}

// loginRate is the rate of the suite's login protection: 5 failed
// attempts a minute (guard.CountOnlyFailures).
var loginRate = throttle.Rate{Limit: 5, Window: time.Minute}

// loginGuard returns the guard of the suite's login protection at rate r,
// counting only failures, on a fresh memory store.
func loginGuard(t testing.TB, r throttle.Rate) *guard.Guard {
	return guard.Quota(NewQuota(t, throttle.QuotaConfig{Name: "login"}), r, guard.CountOnlyFailures())
}

// testOnlyFailuresConcurrent sends 50 wrong passwords at once. Every request
// is charged before its handler runs, so that requests in flight plus
// failures charged never exceed Burst: exactly 5 reach the handler, which
// holds them until all 50 are decided, and 45 are turned away.
func testOnlyFailuresConcurrent(t *testing.T, a Adapter) {
	const n, burst = 50, 5
	var calls atomic.Int32
	entered := make(chan struct{}, n)
	release := make(chan struct{})
	h := a.Wrap(loginGuard(t, loginRate), UserKey(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		entered <- struct{}{}
		<-release
		OK(w, http.StatusUnauthorized)
	}))

	answers := make(chan *httptest.ResponseRecorder, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			answers <- Serve(h, Submit("alice"))
		}()
	}
	close(start)

	// Every request is decided once it is in the handler or answered;
	// only the handlers' release can answer the others.
	var got []*httptest.ResponseRecorder
	inHandler := 0
	stuck := time.NewTimer(30 * time.Second) // a hang, not a timing
	defer stuck.Stop()
wait:
	for inHandler+len(got) < n {
		select {
		case <-entered:
			inHandler++
		case rec := <-answers:
			got = append(got, rec)
		case <-stuck.C:
			t.Errorf("after 30 s only %d of %d requests were decided (%d in the handler)", inHandler+len(got), n, inHandler)
			break wait
		}
	}
	close(release)
	wg.Wait()
	close(answers)
	for rec := range answers {
		got = append(got, rec)
	}

	var failed, refused []*httptest.ResponseRecorder
	for _, rec := range got {
		switch rec.Code {
		case http.StatusUnauthorized:
			failed = append(failed, rec)
		case http.StatusTooManyRequests:
			refused = append(refused, rec)
		default:
			require.Failf(t, "unexpected status", "status %d (body %q)", rec.Code, rec.Body.String())
		}
	}
	assert.Equal(t, int32(burst), calls.Load(), "handler runs")
	assert.Equal(t, burst, inHandler, "requests in the handler at once")
	require.Len(t, failed, burst, "answers 401")
	require.Len(t, refused, n-burst, "answers 429")
	// Each admitted request was charged in turn: the first off a full
	// quota (r=4), the last leaving nothing (r=0). In between, r is at
	// most what an ideal clock gives: the memory store reads its clock
	// before it takes the shard lock, so a charge decided after another
	// may count from an instant before it and see one request less.
	var rs []int64
	for _, rec := range failed {
		rs = append(rs, LimitOf(t, rec.Header(), "login").R)
	}
	slices.SortFunc(rs, cmp.Compare)
	ok := rs[0] == 0 && rs[burst-1] == burst-1
	for i, r := range rs {
		ok = ok && r <= int64(i)
	}
	require.True(t, ok, "RateLimit r of the admitted requests %v, want 0, at most 1, 2, 3, and 4", rs)
	for _, rec := range refused {
		checkViolated(t, CheckProblem(t, rec, http.StatusTooManyRequests, QuotaExceeded, "alice"), "login")
		CheckRejectedLimit(t, rec.Header(), "login", 0)
	}
	// The five failures kept their charges.
	CheckProblem(t, Serve(h, Submit("alice")), http.StatusTooManyRequests, QuotaExceeded)
	require.Equal(t, int32(burst), calls.Load(), "handler runs")
}

// testOnlyFailuresSuccesses checks that successes cost nothing and failures
// do.
func testOnlyFailuresSuccesses(t *testing.T, a Adapter) {
	c := &statusHandler{}
	h := a.Wrap(loginGuard(t, loginRate), UserKey(), c)
	for i := range 20 {
		rec := Serve(h, Submit("alice"))
		Status(t, rec, http.StatusOK)
		CheckPolicy(t, rec.Header(), WindowPolicy("login", 5, 60))
		// Charged while it ran, refunded after: every success starts
		// from a full quota.
		require.Equal(t, int64(4), LimitOf(t, rec.Header(), "login").R,
			"success %d: RateLimit r (the successes before it cost nothing)", i+1)
	}
	for r := int64(4); r >= 0; r-- {
		rec := Serve(h, WithHeader(Submit("alice"), StatusHeader, "401"))
		Status(t, rec, http.StatusUnauthorized)
		CheckLimit(t, rec.Header(), "login", r, 1, 12)
	}
	// Five failures: even a request that would succeed is turned away.
	rec := Serve(h, Submit("alice"))
	checkViolated(t, CheckProblem(t, rec, http.StatusTooManyRequests, QuotaExceeded, "alice"), "login")
	CheckRejectedLimit(t, rec.Header(), "login", 0)
	require.Equal(t, int32(25), c.calls.Load(), "handler runs")
}

// testOnlyFailuresPanic checks that a panicking handler is a failure: it
// keeps its charge.
func testOnlyFailuresPanic(t *testing.T, a Adapter) {
	rate := loginRate
	rate.Limit = 2
	c := &statusHandler{}
	h := a.Wrap(loginGuard(t, rate), UserKey(), c)
	panicking := func() {
		t.Helper()
		require.Same(t, handlerPanic, ServePanic(h, WithHeader(Submit("alice"), StatusHeader, "panic")), "panic value")
	}
	panicking()
	// One charge left: a success uses it while it runs, then gives it back.
	rec := Serve(h, Submit("alice"))
	Status(t, rec, http.StatusOK)
	CheckLimit(t, rec.Header(), "login", 0, 1, 30)
	panicking()
	CheckProblem(t, Serve(h, Submit("alice")), http.StatusTooManyRequests, QuotaExceeded)
	require.Equal(t, int32(3), c.calls.Load(), "handler runs")
}
